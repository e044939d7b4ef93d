// Package mockmodel is a scripted, loopback-only mock of the model APIs that
// coding-agent harnesses talk to. End-to-end tests and demos point a real
// harness (Claude Code, Codex CLI, OpenCode, Gemini CLI) at it and watch the
// harness run a fixed list of shell commands.
//
// One [Server] speaks four wire protocols:
//
//   - Anthropic Messages (Claude Code): POST /v1/messages, SSE or JSON;
//   - OpenAI Responses (Codex): POST /v1/responses, SSE or JSON;
//   - OpenAI Chat Completions (OpenCode): POST /v1/chat/completions;
//   - Gemini (Gemini CLI): POST /v1beta/models/{model}:streamGenerateContent,
//     :generateContent and :countTokens.
//
// # Turn logic
//
// A harness may send side requests (titles, routing, classifiers) and may
// retry, so the mock never counts requests. Each answer is decided from the
// request content alone:
//
//  1. If the request offers no shell-like tool, it is a side call and gets a
//     short plain text reply.
//  2. Otherwise let k be the number of tool results already in the
//     conversation. While k < len(Script.Steps) the reply is one call of the
//     offered shell tool running Steps[k].Command; its call id is derived
//     from k, so it is stable across retries and unique in the conversation.
//  3. Then the reply is Script.Final followed by the first 200 bytes of each
//     tool result, so a test can find the commands' output in the harness's
//     own transcript.
//
// # Request log
//
// Every request is recorded as a [Request] (see [Server.Requests] and
// Options.Log). Credentials never enter the log: the x-api-key,
// Authorization, x-goog-api-key headers and a "key" query parameter are
// recorded only as present, with the SHA-256 of their value ([KeyHash]),
// other secret-looking headers are replaced by "REDACTED", and any
// occurrence of Options.RequireKey in recorded text is masked.
package mockmodel
