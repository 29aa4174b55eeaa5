"""Privacy costs, the budget and the ledger. Imports neither duckdb nor sqlglot."""
