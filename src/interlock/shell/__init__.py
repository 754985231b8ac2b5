"""Reading a bash command line the way bash will: split, words, wrappers.

See docs/guard.md.
"""
