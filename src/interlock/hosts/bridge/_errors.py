"""The bridge's one error, in a module of its own: the fast path imports it and nothing else."""


class BridgeError(Exception):
    """Anything that keeps a bridge from a real answer; the bridge then denies."""
