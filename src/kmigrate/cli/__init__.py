"""Thin commands: parse, call a use case, render. Errors become exit codes here only."""
