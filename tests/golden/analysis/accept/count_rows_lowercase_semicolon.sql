-- Keywords are case-insensitive; one trailing semicolon is allowed.
select count(*) from people;
