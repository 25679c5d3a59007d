-- 0013-symbol-modules.sql - kallsyms' module of a kernel symbol (issue
-- 38; SQLite's 0018): "" for none (a symbol of the kernel's own text, a
-- program's symbol, or one a collector before this wrote). --hist's stack
-- frames print NAME+0xOFF/0xSIZE [MODULE] as the kernel's %pS does.
ALTER TABLE symbols ADD COLUMN module String DEFAULT '';
