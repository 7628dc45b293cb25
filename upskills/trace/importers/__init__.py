"""Importers: turn other agents' logs into upskills traces."""
