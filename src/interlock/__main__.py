from interlock.hosts.cli import main

main()
