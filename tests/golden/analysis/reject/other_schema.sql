-- expect: DP103
SELECT COUNT(*) FROM secret.people
