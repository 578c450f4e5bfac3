"""The package version, in a module of its own so any layer can read it without importing the
package's top level (which imports the upper layers)."""

__version__ = "0.1.0"
