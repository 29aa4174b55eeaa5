-- Schema-qualified names as BI tools write them (main, public; quoted or not).
SELECT COUNT(*) FROM main.people
