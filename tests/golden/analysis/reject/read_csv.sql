-- expect: DP103
SELECT COUNT(*) FROM read_csv('people.csv')
