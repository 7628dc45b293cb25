"""Test cases: executable cases built from tasks, split into train and held-out."""

from upskills.cases.model import CaseError, TestCase, load_cases

__all__ = ["CaseError", "TestCase", "load_cases"]
