-- expect: DP103
SELECT COUNT(*) FROM main.people
