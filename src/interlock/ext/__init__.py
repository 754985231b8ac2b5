"""Extensions: finding, pinning, loading and installing them.

See docs/extensions.md.
"""
