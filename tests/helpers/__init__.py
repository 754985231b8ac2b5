"""Helpers shared by the tests in every folder: import them as ``from helpers.cfg import ...``."""
