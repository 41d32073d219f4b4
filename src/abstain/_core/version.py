"""The library's version, written once: ``abstain.__version__`` and the command line read it."""

VERSION = "0.2.0"
