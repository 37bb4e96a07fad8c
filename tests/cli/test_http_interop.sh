#!/bin/sh
# test_http_interop.sh: real clients of the HTTP API that reagent did not
# write: the pinned `openai` npm package (models.list, chat completions
# plain and streamed, its stream helper, its error classes) and Node's
# fetch on /v1/tasks (tests/interop/http/test_openai.mjs), against
# `reagent serve` and the mock model over loopback.
#
# Run from the repository root by tests/run.sh. Without the interop tree
# it prints why it SKIPPED as its closing line (under CI, or with
# RG_INTEROP_REQUIRED=1, that fails: deploy/deps.sh installs the tree).

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_interop_tree

rg_mock m --rounds 1 --calls 1
mport=$port
hport=$(rg_free_port)
M=$(cd "$B" && pwd)/modules
export RG_API_TOKEN="tok-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"

cat > "$tmp/h.conf" <<CONF
load_module $M/calc.so;
worker_processes 1;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
llm m { base_url http://127.0.0.1:$mport/v1; model mock-1; }
agent a { llm m; tools calc; }
http { listen 127.0.0.1:$hport; auth_token_env RG_API_TOKEN; }
CONF

rg_serve "$tmp/h.conf" "$tmp/serve.out"
rg_wait_for "$tmp/error.log" "http: worker .* answers"

RG_API_URL=http://127.0.0.1:$hport tests/interop/run.sh \
    tests/interop/http/test_openai.mjs > "$tmp/out" 2>&1
rc=$?
sed "s/^/#   /" "$tmp/out"
rg_equal "the openai package and fetch drive the API" "$rc" 0

rg_done
