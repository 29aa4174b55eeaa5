"""Everything after compilation, in one direction: dry runs -> charge -> bounded relation ->
engine statements -> release -> post-processing -> assembly (see executor.py)."""
