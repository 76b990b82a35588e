int sibling_value(void) { return 42; }
