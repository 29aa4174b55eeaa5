-- expect: DP102
PRAGMA table_info('people')
