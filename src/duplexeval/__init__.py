"""duplexeval: measure how voice agents take turns, by rules that do not depend on how they speak."""

__version__ = "0.1.0"
