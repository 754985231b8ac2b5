-- a report
SELECT id, name FROM users WHERE id < 10;
