-- 0018-symbol-modules.sql - the kernel module of a kernel symbol (issue 38;
-- see schema.sql, "Symbols"): kallsyms' "[MODULE]" column, which the
-- kernel's %pS prints after a module symbol's offset and size, as the hist
-- file's stack keys do. NULL: none (the core kernel's symbols, a program's,
-- and every symbol an agent before it sent).
ALTER TABLE symbols ADD COLUMN module TEXT;
