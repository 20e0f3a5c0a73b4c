/* proxy_internal.h - the connection state shared by the proxy's files.
 * One struct conn per accepted agent connection; all progress is made by
 * conn_step(), which runs after any event and steps the connection's state
 * until a step reports that it has to wait. */
#ifndef OS_PROXY_INTERNAL_H
#define OS_PROXY_INTERNAL_H

#include <jansson.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <sys/types.h>

#include <jansson.h>

#include "buf.h"
#include "http.h"
#include "egress_proxy.h"
#include "proxy_budget.h"
#include "sha256.h"
#include "stream.h"

/* A connection's lifecycle; proxy_state.c names the states and holds the
 * transitions allowed between them. Identifying the caller and judging the
 * request never wait, so they happen inside ST_READ_HEAD, not as states. */
enum proxy_conn_state {
	ST_READ_HEAD, /* reading a request head from the agent, then judging it */
	ST_RESOLVE, /* waiting for DNS */
	ST_CONNECT_UPSTREAM, /* upstream TCP connect in progress */
	ST_TLS_CLIENT, /* terminating the agent's TLS after CONNECT */
	ST_TLS_UPSTREAM, /* TLS to the upstream */
	ST_TUNNEL, /* opaque relay (splice) */
	ST_FORWARD, /* one HTTP exchange in flight */
	ST_WEBSOCKET, /* an upgraded WebSocket, client frames judged (proxy_ws.c) */
	ST_CLOSING, /* flushing a final answer, then close */
};
#define PROXY_CONN_STATES (ST_CLOSING + 1)

/* What one step did. conn_step() steps again only after progress, and
 * re-arms the idle timer only if some step made progress. */
enum step_result {
	STEP_WAIT, /* nothing more to do until the next event */
	STEP_PROGRESS, /* the state changed or buffered bytes moved: step again */
	STEP_CLOSED, /* conn_close() ran: the connection is not stepped again */
};

enum conn_mode {
	MODE_NONE,
	MODE_TUNNEL, /* CONNECT, L4 only */
	MODE_MITM, /* CONNECT, TLS terminated, each request judged */
	MODE_HTTP, /* absolute-form http:// requests */
};

enum body_state { BODY_DONE, BODY_LENGTH, BODY_CHUNKED, BODY_UNTIL_CLOSE };

/* The bytes of a placeholder's fixed start, minus one: what a scan keeps
 * of one read to find a placeholder that the next read completes. */
#define BODY_SCAN_TAIL 21

struct json_override;

struct body {
	enum body_state state;
	uint64_t remaining;
	struct http_chunked chunked;
	bool decode; /* chunked: forward the decoded data, not the framing */
	/* A request body searched for credential placeholders as it passes
	 * (proxy_body_scan.c); found: one was seen, nothing more may go. */
	bool scan, found;
	size_t tail_len;
	char tail[BODY_SCAN_TAIL];
	/* A request body whose JSON `_method` members are looked for as it
	 * passes (proxy_json_override.c); NULL: not watched. */
	struct json_override *json;
};

struct proxy;

struct conn {
	struct proxy *proxy;
	struct conn *prev, *next;
	enum proxy_conn_state state; /* changed only by conn_set_state() */
	enum conn_mode mode;
	struct stream client, upstream;
	struct loop_io *cio, *uio;
	struct loop_timer *timer;
	struct buf cin, cout, uin, uout;
	struct http_parser parser; /* request heads from the agent */
	struct http_parser rparser; /* response heads from the upstream */
	bool dead; /* closed; freed by a deferred call */
	/* ST_CLOSING with the answer out: half-closed, discarding what the
	 * agent still sends before the real close (proxy_linger.c). */
	bool lingering;
	size_t linger_read;
	/* local: our address, or on the transparent path the original
	 * destination (what the agent's own socket names as its peer). */
	struct sockaddr_storage peer, local;
	/* Transparent path (proxy_transparent.c): a redirected direct
	 * connection to orig:orig_port; tp_started once its first bytes were
	 * classified; tp_tls: the agent speaks TLS to us, so an answer goes
	 * inside TLS (tls_answer waits for the handshake and the request). */
	bool transparent, tp_started, tp_tls, tp_no_dst;
	struct ip_addr orig;
	uint16_t orig_port;
	char *tls_answer;
	size_t tls_answer_len;
	/* Caller identity, resolved once per connection and kept compact (the
	 * resolver's scratch struct is large; 1,000 idle tunnels must stay small). */
	bool identified;
	pid_t id_pid;
	uid_t id_uid;
	char *chain_store; /* the chain's strings, back to back */
	const char *chain[IDENTITY_CHAIN_MAX]; /* pointers into chain_store */
	size_t n_chain;
	bool id_failed;
	const char *id_reason;
	/* The lookup made when the connection was accepted: the one at the
	 * first request must agree with it, so a socket held by an allowed
	 * binary only for the moment of one lookup is not enough. */
	bool accept_checked;
	const char *accept_failure; /* identity_failure_name(), or NULL */
	uint8_t accept_digest[SHA256_LEN];
	struct policy_gen *gen; /* generation that admitted the tunnel/connection */
	uint64_t gen_serial;
	/* destination */
	char host[256];
	uint16_t port;
	/* The endpoint judging the current request: policy_decide_connect's
	 * choice, then the one its path routes to (policy_route_request). */
	const struct policy_endpoint *ep;
	char policy_name[128];
	bool any_caller; /* judged without caller identity (endpoint-only) */
	char dst[64];
	struct resolver_query *query;
	struct ip_addr addrs[RESOLVER_ADDRS_MAX];
	size_t n_addrs, next_addr;
	bool tls_upstream;
	bool inference;
	/* inference: the configured backend, when it differs from host:port */
	char up_host[256];
	uint16_t up_port;
	bool up_tls;
	/* MODE_HTTP: the kept-alive upstream and what it is connected to */
	char conn_host[256];
	uint16_t conn_port;
	/* current exchange */
	bool req_is_head, client_close, upstream_close, resp_head_done;
	/* A secret was injected into this exchange: its response is scrubbed of
	 * every secret, and the last `hold` bytes of cout wait for the next
	 * bytes so a secret split across reads is still caught. */
	bool injected;
	/* The answer now relayed is scrubbed: its exchange injected a secret,
	 * or its upstream ever received one (secret_echo.h), or it comes from
	 * an inference backend (which holds its key). */
	bool masking;
	size_t hold;
	struct body req_body, resp_body;
	/* network_middlewares rewrote this exchange's body: mw_body is sent
	 * instead of the agent's (proxy_middleware.c). */
	bool mw_replaced;
	struct buf mw_body;
	size_t mw_raw; /* the agent's body on the wire, framing included */
	/* credential_signing on this exchange (proxy_sigv4.c): the payload
	 * hash signed and sent as x-amz-content-sha256. */
	bool signing;
	char sig_payload[72];
	/* The agent was told 100 Continue while its body is read whole
	 * (proxy_body_continue); its Expect is not sent upstream then. */
	bool continue_sent;
	/* splice pipes: [0] agent->upstream, [1] upstream->agent */
	int pipes[2][2];
	size_t piped[2];
	bool half_closed[2];
	bool pipe_grown[2];
	/* MODE_TUNNEL to a named host: the agent's first bytes wait in cin
	 * until their TLS server name is checked (proxy_sni.c), then go out
	 * through uout (sni_flushing) before splicing starts; sni_eof: the
	 * agent closed its side meanwhile, passed on once they are out. */
	bool sni_pending, sni_flushing, sni_eof;
	/* Memory: what this connection is charged in the proxy's budget, and
	 * whether a read waits for the budget (then no read interest is armed
	 * and the proxy steps it again when the budget resumes). */
	size_t charged;
	bool mem_waiting;
	/* Read interest is off on that side while the connection relays
	 * (backpressure): its receive queue may fill without an event, so its
	 * whole receive buffer is charged (conn_update_interest sets them). */
	bool client_paused, upstream_paused;
	struct loop_defer *resume;
	bool up_slot; /* holds one of the sandbox's upstream connection slots */
	/* An MCP server's event stream being judged (proxy_sse.c), or NULL;
	 * sse_in holds its decoded body bytes not yet parsed. */
	struct sse_parser *sse;
	struct buf sse_in;
	bool mcp_json; /* ...or a JSON answer, judged once whole */
	/* The exchange asks a websocket endpoint to upgrade (proxy_ws.c), and
	 * the relay once it did. */
	bool ws_upgrade;
	struct ws_relay *ws;
	struct json_watch *json_watch; /* this exchange's JSON `_method` watch */
};

/* What one connection costs beyond its buffers: the record itself, its loop
 * watches, timer and identity chain; each TLS session (SSL state, session,
 * certificate references and, while busy, its two record buffers: they are
 * released when empty, SSL_MODE_RELEASE_BUFFERS). Estimates, kept high. */
#define PROXY_CONN_OVERHEAD (sizeof(struct conn) + 2048)
#define PROXY_TLS_OVERHEAD (48 * 1024)
/* SO_RCVBUF and SO_SNDBUF asked for every proxied socket, both sides (the
 * kernel doubles them): without them TCP autotuning lets the receive queue
 * of an upstream the proxy stops reading grow to tcp_rmem's maximum (6 MiB
 * by default), outside the budget. What the kernel holds is charged to the
 * budget (kernel_held in proxy.c): a send queue grows only by our writes,
 * so it is charged as it is and may be larger; a receive queue can fill
 * while its side is paused, so a paused side is charged its whole buffer,
 * which therefore stays small. 256 KiB keeps a 512 KiB receive window:
 * about 25 MB/s per connection at 20 ms round trip. */
#define PROXY_SOCK_RCVBUF (256 * 1024)
#define PROXY_SOCK_SNDBUF (1024 * 1024)
/* Caps a proxied socket's kernel buffers (PROXY_SOCK_RCVBUF, _SNDBUF). */
void proxy_cap_socket_buffers(int fd);
/* A bulk tunnel's pipe size (per direction): pipes hold at most this. */
#define PROXY_PIPE_BULK (1 << 20)

/* proxy_state.c */
const char *proxy_conn_state_name(enum proxy_conn_state s);
bool proxy_conn_transition_allowed(enum proxy_conn_state from, enum proxy_conn_state to);
/* The one way to change c->state: checks the move and logs it (debug). */
void conn_set_state(struct conn *c, enum proxy_conn_state to);

/* proxy.c */
void conn_close(struct conn *c);
void conn_update_interest(struct conn *c);
void conn_step(struct conn *c);
struct policy_gen *proxy_current(struct proxy *p, uint64_t *serial);
/* Bumped by every policy update (proxy_policy_changed). */
uint64_t proxy_policy_serial(const struct proxy *p);
/* The L4 decision for c's host:port and caller under g (proxy_request.c). */
/* True when c is judged by endpoint only (no caller identity to match). */
bool proxy_any_caller(const struct conn *c, const struct policy_gen *g);
void proxy_decide_connect(const struct conn *c, const struct policy_gen *g,
			  struct policy_decision *d);
const struct proxy_config *proxy_cfg(const struct proxy *p);
struct secret_echo *proxy_echo(const struct proxy *p);
struct denials *proxy_denials(const struct proxy *p);
/* proxy_secret_guard.c: does c lead to an upstream holding a secret (by its
 * name or its connected address); c has just sent one there. */
bool conn_holds_secret(const struct conn *c);
void conn_mark_secret_holder(struct conn *c);
/* Closes every open L4 tunnel that now leads to a secret holder. */
void proxy_close_secret_tunnels(struct proxy *p);
struct loop *proxy_loop(const struct proxy *p);
/* Re-counts c's buffers in the proxy's budget (after they grew or shrank). */
void conn_charge(struct conn *c);
/* How many of `want` bytes c may read in now (the budget's allowance);
 * 0 marks c as waiting for memory. */
size_t conn_read_room(struct conn *c, size_t want);
/* An upstream connection slot for c (kept until upstream_drop/conn_close):
 * false when the sandbox's cap is reached. */
bool conn_take_upstream(struct conn *c);
void conn_put_upstream(struct conn *c);

/* proxy_linger.c: the close after a final answer. start: half-closes and
 * returns true when the agent may still send (then the connection
 * lingers); false: close now. step: discards input, true once done. */
bool conn_linger_start(struct conn *c);
bool conn_linger_step(struct conn *c);

/* proxy_reply.c: answers to the agent, each with an audit record */
/* Queues a complete JSON answer (body is consumed) and closes after it. */
void reply_json(struct conn *c, int status, json_t *body, const char *policy_header);
void reply_error(struct conn *c, int status, const char *error, const char *detail,
		 const char *reason);
/* A local answer (policy.local): 200/404/405, no Proxy-Status error. Takes body. */
void reply_local_json(struct conn *c, int status, json_t *body);
void reply_policy_denied(struct conn *c, const struct policy_decision *d, const char *method,
			 const char *path);
void audit_decision(struct conn *c, const char *event, const char *decision, const char *reason,
		    const char *method, const char *path, const char *detail);

/* proxy_request.c */
enum step_result request_head_step(struct conn *c);
/* Judges c->host:c->port (a CONNECT's, or a transparent connection's) and
 * opens the way: inference, tunnel or TLS termination; answers on deny. */
void proxy_open_target(struct conn *c);
/* The first of the two caller lookups, when the connection is accepted. */
void proxy_identify_at_accept(struct conn *c);
/* proxy_local.c: answers a plain request to http://policy.local/... */
void proxy_serve_local(struct conn *c, const struct http_request *req);

/* proxy_rpc.c: json-rpc / mcp endpoints; RPC_WAIT: the body is not all
 * here yet (the head is parsed again when more bytes arrive). */
enum rpc_step { RPC_FORWARD, RPC_WAIT, RPC_ANSWERED };
enum rpc_step proxy_judge_rpc(struct conn *c, const struct http_request *req, const char *method,
			      const char *path, size_t consumed);

/* proxy_body.c: a body judged whole: 411 when chunked, 413 over cap,
 * RPC_WAIT until it is all buffered, then RPC_FORWARD (judge it). */
struct whole_body {
	const char *what; /* "JSON-RPC", "GraphQL" */
	uint64_t cap;
	const char *cap_name; /* the policy key that sets cap */
	const char *chunked_reason, *too_large_reason;
};
enum rpc_step proxy_whole_body(struct conn *c, const struct http_request *req,
			       const struct whole_body *w, size_t consumed);
/* Before waiting for a body read whole: an agent that sent Expect:
 * 100-continue is answered 100 once, so it sends the body now. */
void proxy_body_continue(struct conn *c, const struct http_request *req);

/* proxy_shape.c: `_method` in a POSTed form body, judged like the method. */
#define FORM_BODY_MAX (128u * 1024)
enum rpc_step proxy_judge_form(struct conn *c, const struct http_request *req, const char *method,
			       const char *raw, const char *logged, size_t consumed,
			       struct policy_decision *d);

/* proxy_middleware.c: the network_middlewares chain (same steps as
 * proxy_judge_rpc); commit swaps a rewritten body in once the head is
 * built; refuses_tunnel answers a CONNECT that a fail_closed middleware
 * selects but that would not be inspected. */
enum rpc_step proxy_run_middlewares(struct conn *c, const struct http_request *req,
				    const char *path, size_t consumed);
int proxy_middleware_commit(struct conn *c, const struct http_request *req, os_error *err);
bool proxy_middleware_refuses_tunnel(struct conn *c);
/* The openshell/regex replacement of in[0..len) appended to out: the
 * number of matches replaced, or (size_t)-1 with err set. */
size_t mw_regex_redact(const char *in, size_t len, struct buf *out, os_error *err);

/* proxy_graphql.c: graphql endpoints (same steps as proxy_judge_rpc). */
enum rpc_step proxy_judge_graphql(struct conn *c, const struct http_request *req,
				  const char *method, const char *path, size_t consumed);
/* One operation judged by the endpoint's graphql rules, and its audit
 * label ("mutation M" / "query -" / "persisted KEY"). */
struct graphql_http_op;
void proxy_graphql_decide(struct conn *c, const struct graphql_http_op *o,
			  struct policy_decision *d);
void proxy_graphql_op_label(const struct graphql_http_op *o, char *out, size_t n);
/* proxy_ws_graphql.c: a text message on a websocket endpoint whose rules
 * are GraphQL: NULL when it goes on (audited), else the reason it closes
 * the connection (1008), with detail. */
const char *proxy_ws_graphql_judge(struct conn *c, const char *target, const char *logged,
				   const char *text, size_t len, char *detail, size_t cap);

/* proxy_middleware_ws.c: the network_middlewares chain on one WebSocket
 * client text message. disabled: the connection's fail_open stages that
 * failed once (bit per chain position), skipped from then on. */
enum mw_ws_result { MW_WS_PASS, MW_WS_REPLACED, MW_WS_FAILED };
enum mw_ws_result proxy_middleware_ws(struct conn *c, uint32_t *disabled, const char *logged,
				      const char *text, size_t len, struct buf *out, char *detail,
				      size_t cap);
/* A binary message starts: each active stage records that it cannot see
 * it (upstream's unsupported_message_type coverage). */
void proxy_middleware_ws_binary(struct conn *c, uint32_t disabled, const char *logged);

/* proxy_sse.c: MCP answers, judged before the agent sees them */
enum mcp_answer { MCP_ANSWER_NONE, MCP_ANSWER_SSE, MCP_ANSWER_JSON };
enum mcp_answer proxy_mcp_answer_kind(const struct conn *c, const struct http_response *resp);
int proxy_sse_start(struct conn *c, bool json, os_error *err);
void proxy_sse_stop(struct conn *c);
/* Body bytes uin -> parser -> cout (allowed events only). */
int proxy_sse_pump(struct conn *c, bool ueof, bool *moved, os_error *err);
/* What an answer being judged holds (the proxy's memory budget). */
size_t proxy_sse_held(const struct conn *c);
/* No parsed-but-unjudged bytes remain. */
bool proxy_sse_drained(const struct conn *c);

/* proxy_ws.c: protocol: websocket. The upgrade request is checked (false:
 * answered), its headers chosen, the 101 taken, then frames relayed. */
bool proxy_ws_check_upgrade(struct conn *c, const struct http_request *req, const char *target,
			    const char *logged);
/* Whether request header h goes upstream as is on this exchange. */
bool proxy_ws_header_dropped(const struct conn *c, struct http_slice name);
bool proxy_ws_hop_kept(const struct conn *c, struct http_slice name);
/* The Sec-WebSocket-Extensions offer sent upstream instead, or NULL. */
const char *proxy_ws_offer(const struct conn *c);
int proxy_ws_accept(struct conn *c, const struct http_response *resp, size_t head_len,
		    os_error *err);
enum step_result proxy_ws_step(struct conn *c);
void proxy_ws_free(struct conn *c);
size_t proxy_ws_held(const struct conn *c);
/* proxy_ws_creds.c: websocket_credential_rewrite. Every placeholder of
 * in[0..len) resolved into out: NULL, or the reason it cannot be (nothing
 * of the message may be sent then). */
bool proxy_ws_has_placeholder(const char *p, size_t n);
const char *proxy_ws_rewrite(struct conn *c, const char *in, size_t len, struct buf *out);
/* The same for any text; too_big names the failure when out overflows. */
const char *proxy_text_rewrite(struct conn *c, const char *in, size_t len, struct buf *out,
			       const char *too_big);
/* proxy_request.c: may provider's secrets go out on this exchange (the
 * endpoint that admitted it binds that provider)? Is the upstream TLS? */
bool proxy_cred_allowed(void *conn, const char *provider);
bool conn_upstream_is_tls(const struct conn *c);

/* proxy_body_creds.c: request_body_credential_rewrite. Placeholders in a
 * textual body (JSON, form, text; identity encoding, UTF-8) are resolved
 * into mw_body, sent with its own Content-Length; other bodies go as they
 * are. Same steps as proxy_judge_rpc. */
#define BODY_CREDS_MAX (128u * 1024)
enum rpc_step proxy_body_credentials(struct conn *c, const struct http_request *req,
				     const char *path, size_t consumed);

/* proxy_sigv4.c: credential_signing. prepare (same steps as
 * proxy_judge_rpc) settles the payload hash and the keys; drops names the
 * agent's own signing headers; sign appends the signed ones to the head. */
#define SIGV4_BODY_MAX (128u * 1024)
enum rpc_step proxy_sigv4_prepare(struct conn *c, const struct http_request *req, size_t consumed);
bool proxy_sigv4_drops(const struct conn *c, struct http_slice name);
int proxy_sigv4_sign(struct conn *c, const struct http_request *req, const char *method,
		     const char *canon, os_error *err);

/* proxy_transparent.c */
/* At accept: the original destination of a redirected connection. */
void transparent_accepted(struct conn *c, int fd);
/* ST_READ_HEAD of a transparent connection before anything was judged:
 * the name from the ClientHello (peeked, left in the socket) or, for
 * plain HTTP, hands over to the request parser. */
enum step_result transparent_first_step(struct conn *c);
/* The Host header of a transparent plain-HTTP request as c->host (false:
 * answered). */
bool transparent_take_host(struct conn *c, const struct http_request *req);
/* Keeps only the resolved addresses equal to the original destination:
 * false when there is none (answered). */
bool transparent_check_addresses(struct conn *c, const struct ip_addr *addrs, size_t n);
/* An answer queued in cout for an agent that speaks TLS to us: kept until
 * our TLS (sandbox CA) is up, or dropped with the connection closed when
 * that cannot be. True when it took over. */
bool transparent_defer_answer(struct conn *c);

/* proxy_upstream.c */
void upstream_start(struct conn *c);
void upstream_drop(struct conn *c);
/* MODE_HTTP: closes an idle upstream that hung up or spoke out of turn. */
void upstream_check_idle(struct conn *c);
enum step_result upstream_connect_step(struct conn *c);
enum step_result tls_accept_step(struct conn *c);
enum step_result tls_connect_step(struct conn *c);

/* proxy_shape.c: false when the request was answered (refused) */
bool proxy_judge_shape(struct conn *c, const struct http_request *req, const char *method,
		       const char *raw, const char *logged, struct policy_decision *d);
struct method_overrides;
/* The decision for override i of o on target raw, renamed to
 * method_override_denied when it is not an allow. */
void proxy_override_decision(struct conn *c, const struct method_overrides *o, size_t i,
			     const char *raw, struct policy_decision *od);
/* Could some override make the decision on raw differ from POST's? */
bool proxy_override_could_matter(struct conn *c, const char *raw);

/* proxy_json_override.c: `_method` members of JSON POST bodies, judged as
 * the body streams. start: false when answered (out of memory); judge:
 * STEP_WAIT, or the step result of a refusal. */
bool proxy_json_watch_start(struct conn *c, const struct http_request *req, const char *method,
			    const char *raw, const char *logged);
enum step_result proxy_json_watch_judge(struct conn *c);
void proxy_json_watch_free(struct conn *c);

/* proxy_sni.c: tunnel_step() hands the agent->upstream direction to
 * tunnel_sni_step() while tunnel_sni_pending(). */
bool tunnel_sni_pending(const struct conn *c);
enum step_result tunnel_sni_step(struct conn *c);

/* proxy_relay.c */
int tunnel_start(struct conn *c);
enum step_result tunnel_step(struct conn *c);
enum step_result forward_step(struct conn *c);
int body_init_request(struct body *b, const struct http_request *req, os_error *err);
/* Reads from one side into b within its cap and c's budget: true if bytes
 * came, *eof on end of stream or error. */
bool conn_read_side(struct conn *c, struct stream *s, struct buf *b, bool *eof);
/* Queues resp's status line and headers for the agent, those skip() names
 * left out, without the blank line that ends the head. */
int conn_write_response_head(struct conn *c, const struct http_response *resp,
			     bool (*skip)(struct http_slice name), os_error *err);
/* proxy_body_scan.c: OpenShell's fail-closed body check. A request body
 * toward an endpoint that binds credentials but neither rewrites them in
 * bodies (request_body_credential_rewrite) nor allows them uninspected
 * (allow_uninspected_credentials) must not carry a placeholder; the data
 * bytes (decoded from chunks) are searched as they pass, across reads. */
bool body_scan_wanted(const struct conn *c);
void body_scan_feed(struct body *b, const char *p, size_t n);
/* Before the head goes: a body replaced by a middleware, or the part of a
 * Content-Length body already read (most bodies are whole by now), so that
 * a refused request is not even begun upstream. Sets c->req_body.found. */
void body_scan_ahead(struct conn *c, size_t consumed);
/* A placeholder was seen: what was not sent yet is dropped, the upstream
 * connection with it (its request stays incomplete), and the agent gets a
 * 403 when no answer has started; then the connection closes. */
enum step_result body_scan_refuse(struct conn *c);

/* Moves framed body bytes from in to out: the number moved, or -1 on a
 * framing error. Scanned bodies (b->scan) are fed to body_scan_feed. */
ssize_t body_pump(struct body *b, struct buf *in, struct buf *out, os_error *err);

#endif
