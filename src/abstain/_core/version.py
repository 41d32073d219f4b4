"""The library's version, written once: ``abstain.__version__`` and the command line read it."""

VERSION = "0.1.0"
