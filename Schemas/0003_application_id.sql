-- Marks the file as a modelctl demo database ("MODC"), so that modelctl refuses other files
-- before it writes to them, and other tools can tell what the file is.
PRAGMA application_id = 1297040451;
