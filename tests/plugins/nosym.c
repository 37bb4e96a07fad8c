/* nosym.c: a test plugin that is a valid shared object but not a module:
 * it exports no `rg_tool_module` symbol, only a function. */

__attribute__((visibility("default"))) int rg_nosym_answer(void);


int
rg_nosym_answer(void)
{
    return 42;
}
