/* mcp_methods.h - the core methods of the Model Context Protocol
 * (revisions 2025-03-26, 2025-06-18 and 2025-11-25) and who may send each:
 * the policy's method profile (`allow_all_known_mcp_methods`) covers the
 * core methods a sender may use; any other name is an extension, allowed
 * only by a rule naming it. */
#ifndef OS_POLICY_MCP_METHODS_H
#define OS_POLICY_MCP_METHODS_H

#include <stdbool.h>

enum mcp_method_class {
	MCP_EXTENSION = 0, /* not a core method of any supported revision */
	MCP_CORE, /* a core method this sender may send */
	MCP_WRONG_DIRECTION, /* a core method only the other peer sends */
};

/* from_client: the client (the agent) sends it; else the server does. */
enum mcp_method_class mcp_method_class(const char *method, bool from_client);

/* MCP's recommended tool name: ^[A-Za-z0-9_.-]{1,128}$ (strict_tool_names). */
bool mcp_tool_name_ok(const char *name);

#endif
