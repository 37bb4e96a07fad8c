#!/bin/sh
# test_http_face.sh: the OpenAI-compatible face of `reagent serve`
# (src/http/rg_http_openai.c) as a client that streams sees it, with an
# llm that streams, in each wire format: the model's text arrives as it
# comes (the first piece long before the end), once, the same as the
# whole answer; a secret the model writes is scrubbed even when the
# stream cuts it in two; response_format and the other fields that would
# change the answer's shape are a 400 naming them; fields the agent
# decides itself are answered, and said to be ignored.
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need jq curl

export RG_TEST_TOKEN="tok-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
export RG_TEST_KEY="sk-face-secret-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"

# the answer, slowly: 4 bytes a piece, 60 ms apart
rg_mock m --rounds 1 --calls 1 --stream-chunk 4 --stream-delay 60
mport=$port

# an answer that quotes the key, cut in pieces of 5 bytes
cat > "$tmp/leak.json" <<JSON
[{"message":{"content":"the key is $RG_TEST_KEY, keep it"}}]
JSON
rg_mock k --script "$tmp/leak.json" --stream-chunk 5
kport=$port

hport=$(rg_free_port)
M=$(cd "$B" && pwd)/modules

cat > "$tmp/f.conf" <<CONF
load_module $M/calc.so;
worker_processes 1;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
llm chat { base_url http://127.0.0.1:$mport/v1; model mock-1; stream on; }
llm anthropic { base_url http://127.0.0.1:$mport/v1; model mock-1;
                format anthropic; stream on; }
llm responses { base_url http://127.0.0.1:$mport/v1; model mock-1;
                format responses; stream on; }
llm leaky { base_url http://127.0.0.1:$kport/v1; model mock-1; stream on;
            api_key_env RG_TEST_KEY; }
agent chat { llm chat; tools calc; }
agent anthropic { llm anthropic; tools calc; }
agent responses { llm responses; tools calc; }
agent leaky { llm leaky; }
http {
    listen 127.0.0.1:$hport;
    auth_token_env RG_TEST_TOKEN;
}
CONF

rg_serve "$tmp/f.conf" "$tmp/serve.out"
rg_wait_for "$tmp/error.log" "http: worker .* answers"

U=http://127.0.0.1:$hport
A="Authorization: Bearer $RG_TEST_TOKEN"

# stream AGENT: each SSE data line with the ms it arrived at, in
# $tmp/AGENT.lines ("ms json")
stream() {
    python3 - "$U/v1/chat/completions" "$RG_TEST_TOKEN" "$1" \
        > "$tmp/$1.lines" <<'PY'
import json, sys, time, urllib.request
url, token, agent = sys.argv[1:4]
body = json.dumps({"model": agent, "stream": True,
                   "messages": [{"role": "user", "content": "hi"}]})
req = urllib.request.Request(url, data=body.encode(), headers={
    "Authorization": "Bearer " + token, "Content-Type": "application/json"})
start = time.monotonic()
with urllib.request.urlopen(req) as r:
    for line in r:
        line = line.decode().rstrip("\n")
        if line.startswith("data: "):
            print(int((time.monotonic() - start) * 1000), line[6:],
                  flush=True)
PY
}

for f in chat anthropic responses; do
    stream $f
    grep -v ' \[DONE\]$' "$tmp/$f.lines" | cut -d' ' -f2- > "$tmp/$f.chunks"
    text=$(jq -rs 'map(.choices[0]?.delta.content // "") | add' \
           "$tmp/$f.chunks")
    pieces=$(jq -s '[.[] | select((.choices[0]?.delta.content // "")
                                  | length > 0)] | length' "$tmp/$f.chunks")
    first=$(jq -rs 'to_entries | map(select((.value.choices[0]?.delta.content
                                             // "") | length > 0))
                    | .[0].key' "$tmp/$f.chunks")
    t_first=$(grep -v ' \[DONE\]$' "$tmp/$f.lines" | sed -n "$((first + 1))p" \
              | cut -d' ' -f1)
    t_done=$(tail -n 1 "$tmp/$f.lines" | cut -d' ' -f1)

    curl -s "$U/v1/chat/completions" -H "$A" -o "$tmp/$f.whole" \
        -d "{\"model\":\"$f\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
    whole=$(jq -r '.choices[0].message.content' "$tmp/$f.whole")

    rg_check "$f: the text came in many pieces ($pieces)" \
        test "$pieces" -ge 4
    rg_check "$f: the first came long before the end ($t_first of $t_done ms)" \
        test $((t_done - t_first)) -ge 150
    rg_equal "$f: streamed, it is the whole answer, once" "$text" "$whole"
    rg_equal "$f: and [DONE] last" "$(tail -n 1 "$tmp/$f.lines" \
                                      | cut -d' ' -f2-)" "[DONE]"
done

stream leaky
rg_lacks "a key the model writes is not streamed, even cut in pieces" \
    "$tmp/leaky.lines" "$(echo "$RG_TEST_KEY" | cut -c 6-)"
rg_expect "... it is masked" "$tmp/leaky.lines" 'sk-…'

rg_equal "response_format json_object: 400" \
    "$(rg_req POST /v1/chat/completions -H "$A" \
       -d '{"model":"chat","response_format":{"type":"json_object"},"messages":[{"role":"user","content":"x"}]}')" \
    400
rg_expect "... naming the field" "$tmp/body" \
    '"response_format\\" \\"json_object\\" cannot be honoured'
rg_equal "response_format text is what an agent gives: 200" \
    "$(rg_req POST /v1/chat/completions -H "$A" \
       -d '{"model":"chat","response_format":{"type":"text"},"messages":[{"role":"user","content":"x"}]}')" \
    200
rg_equal "logprobs: 400" \
    "$(rg_req POST /v1/chat/completions -H "$A" \
       -d '{"model":"chat","logprobs":true,"messages":[{"role":"user","content":"x"}]}')" \
    400
rg_expect "... naming it" "$tmp/body" '"logprobs\\" is not supported'

curl -s -D "$tmp/ign.h" -o "$tmp/ign.json" "$U/v1/chat/completions" -H "$A" \
    -d '{"model":"chat","temperature":0.2,"max_tokens":50,"messages":[{"role":"user","content":"x"}]}'
rg_expect "fields the agent decides are answered, and said to be ignored" \
    "$tmp/ign.h" '^X-Reagent-Ignored: temperature, max_tokens'
rg_check "... in the answer too" \
    jq -e '.reagent.ignored == "temperature, max_tokens"' \
    "$tmp/ign.json" > /dev/null

rg_done
