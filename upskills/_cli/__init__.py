"""Command-line shell over the library: one small module per command group."""
