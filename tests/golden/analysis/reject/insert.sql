-- expect: DP102
INSERT INTO people VALUES (1, 30, 1000.0, 'sales', 'north')
