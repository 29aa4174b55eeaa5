"""`dpsql serve`: a PostgreSQL wire-protocol (v3) server over one Session per analyst connection."""
