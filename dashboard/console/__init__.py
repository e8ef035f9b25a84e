"""The analysts' SQL console: its routes (sql_routes), the locked engine and what it lets run
(sqlsafe, sqlparams, sqlfuncs), the worker processes (sqlpool; sqlworker, their side), charts
of a result (sqlchart) and the saved queries (saved)."""
