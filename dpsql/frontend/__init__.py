"""SQL text in, a parsed statement out: the dpsql dialect, parameter binding and error spans."""
