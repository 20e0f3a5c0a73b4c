/* mcp_methods.c - the MCP core method table (see mcp_methods.h). From the
 * MCP specification's schema: requests and notifications by sender. */
#include <string.h>

#include "mcp_methods.h"

enum sender { CLIENT = 1, SERVER = 2, BOTH = 3 };

static const struct {
	const char *name;
	enum sender by;
} core[] = {
	{ "initialize", CLIENT },
	{ "ping", BOTH },
	{ "notifications/initialized", CLIENT },
	{ "notifications/cancelled", BOTH },
	{ "notifications/progress", BOTH },
	{ "notifications/roots/list_changed", CLIENT },
	{ "tools/list", CLIENT },
	{ "tools/call", CLIENT },
	{ "resources/list", CLIENT },
	{ "resources/templates/list", CLIENT },
	{ "resources/read", CLIENT },
	{ "resources/subscribe", CLIENT },
	{ "resources/unsubscribe", CLIENT },
	{ "prompts/list", CLIENT },
	{ "prompts/get", CLIENT },
	{ "completion/complete", CLIENT },
	{ "logging/setLevel", CLIENT },
	{ "tasks/get", BOTH }, /* 2025-11-25 tasks: either side may hold them */
	{ "tasks/result", BOTH },
	{ "tasks/list", BOTH },
	{ "tasks/cancel", BOTH },
	{ "notifications/tasks/status", BOTH },
	{ "sampling/createMessage", SERVER },
	{ "elicitation/create", SERVER },
	{ "roots/list", SERVER },
	{ "notifications/message", SERVER },
	{ "notifications/resources/updated", SERVER },
	{ "notifications/resources/list_changed", SERVER },
	{ "notifications/tools/list_changed", SERVER },
	{ "notifications/prompts/list_changed", SERVER },
	{ "notifications/elicitation/complete", SERVER },
};

enum mcp_method_class mcp_method_class(const char *method, bool from_client)
{
	for (size_t i = 0; i < sizeof core / sizeof core[0]; i++)
		if (!strcmp(core[i].name, method))
			return core[i].by & (from_client ? CLIENT : SERVER) ? MCP_CORE
									    : MCP_WRONG_DIRECTION;
	return MCP_EXTENSION;
}

bool mcp_tool_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > 128)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.'))
			return false;
	}
	return true;
}
