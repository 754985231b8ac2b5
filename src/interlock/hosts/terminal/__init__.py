"""The reference agent as a terminal host: `interlock run` and `interlock chat`."""
