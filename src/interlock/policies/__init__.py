"""The pure logic of the bundled hooks (``interlock/bundled/<name>/``).

Each module here is a policy that can be unit-tested without any loader:
it takes an event (or plain values) and returns a decision or None. The
bundled ``handler.py`` files are thin adapters over these modules.
"""
