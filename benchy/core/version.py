"""The package version (also the JSON's ``benchy_version``); setup.cfg reads it from here."""

__version__ = "0.2.0"
