"""Pure checks of a parsed statement against the policy (DP1xx rules), then binding to IR."""
