"""``python -I -m interlock.bridge <agent>``: the line ``bridge install`` writes.

The bridge lives in :mod:`interlock.hosts.bridge`; this module keeps the
installed line's path, so a config written by any version still runs its
hooks (an agent reads a hook that fails to start as "allow").
"""

if __name__ == "__main__":
    import interlock.hosts.bridge.__main__  # noqa: F401  (runs the bridge, then exits)
else:
    from interlock.hosts.bridge import main as main
