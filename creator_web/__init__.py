"""The browser collection tool (server + page); recording goes through ``loggers``. Not built yet."""
