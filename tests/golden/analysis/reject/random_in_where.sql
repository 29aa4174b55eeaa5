-- expect: DP113
SELECT COUNT(*) FROM people WHERE random() < 0.5
