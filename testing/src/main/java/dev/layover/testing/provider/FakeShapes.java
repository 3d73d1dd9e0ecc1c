package dev.layover.testing.provider;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.layover.testing.provider.FakeProvider.Api;
import dev.layover.testing.provider.FakeProvider.Dimension;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The answers and errors of the fake provider in each API's real shape: OpenAI chat completions,
 * Anthropic messages, Gemini {@code generateContent}, Bedrock Converse. Only shapes; the limits and
 * counting are the endpoint's.
 */
final class FakeShapes {

    /** An HTTP answer to send. */
    record Reply(int status, Map<String, String> headers, String body) {}

    /** The token usage of one answer. */
    record Usage(long input, long output, long cached) {}

    /**
     * What refused a call, for the 429's words.
     *
     * @param dimension the limit that refused
     * @param limitPerMinute its size per minute
     * @param used how much of it is spent now
     * @param requested what the call needed of it
     * @param waitSeconds how long until it would admit the call (or is full again, when it never can)
     * @param neverFits whether the call needs more than the limit can ever hold
     */
    record Refusal(Dimension dimension, long limitPerMinute, long used, long requested, double waitSeconds,
            boolean neverFits) {}

    static final String ORG = "org-fake";
    private static final String OPENAI_DOCS = "Visit https://platform.openai.com/account/rate-limits to learn more.";
    private static final String ANTHROPIC_DOCS = "For details, refer to: https://docs.anthropic.com/en/api/rate-limits. "
            + "You can see the response headers for current usage. Please reduce the prompt length or the maximum "
            + "tokens requested, or try again later.";
    private static final String BEDROCK_ERROR_TYPE = ":http://internal.amazon.com/coral/com.amazon.bedrock/";

    private final ObjectMapper json;

    FakeShapes(ObjectMapper json) {
        this.json = json;
    }

    // ---- answers -------------------------------------------------------------------------------

    /** A successful answer: {@code content}, whether it was cut at the ceiling, and its usage. */
    String answer(Api api, String id, String model, String content, boolean cut, Usage u, long epochSecond) {
        ObjectNode root = json.createObjectNode();
        switch (api) {
            case OPENAI_CHAT -> {
                root.put("id", "chatcmpl-fake-" + id).put("object", "chat.completion").put("created", epochSecond)
                        .put("model", model);
                ObjectNode choice = root.putArray("choices").addObject().put("index", 0);
                choice.putObject("message").put("role", "assistant").put("content", content);
                choice.put("finish_reason", cut ? "length" : "stop");
                ObjectNode usage = root.putObject("usage").put("prompt_tokens", u.input())
                        .put("completion_tokens", u.output()).put("total_tokens", u.input() + u.output());
                usage.putObject("prompt_tokens_details").put("cached_tokens", u.cached());
            }
            case ANTHROPIC_MESSAGES -> {
                root.put("id", "msg_fake" + id).put("type", "message").put("role", "assistant").put("model", model);
                root.putArray("content").addObject().put("type", "text").put("text", content);
                root.put("stop_reason", cut ? "max_tokens" : "end_turn").putNull("stop_sequence");
                // Anthropic's input_tokens excludes what was read from the cache
                root.putObject("usage").put("input_tokens", u.input() - u.cached()).put("output_tokens", u.output())
                        .put("cache_creation_input_tokens", 0).put("cache_read_input_tokens", u.cached());
            }
            case GEMINI_GENERATE_CONTENT -> {
                ObjectNode candidate = root.putArray("candidates").addObject();
                candidate.putObject("content").put("role", "model").putArray("parts").addObject().put("text", content);
                candidate.put("finishReason", cut ? "MAX_TOKENS" : "STOP").put("index", 0);
                ObjectNode usage = root.putObject("usageMetadata").put("promptTokenCount", u.input())
                        .put("candidatesTokenCount", u.output()).put("totalTokenCount", u.input() + u.output());
                if (u.cached() > 0) {
                    usage.put("cachedContentTokenCount", u.cached());
                }
                root.put("modelVersion", model).put("responseId", "fake-" + id);
            }
            case BEDROCK_CONVERSE -> {
                ObjectNode message = root.putObject("output").putObject("message").put("role", "assistant");
                message.putArray("content").addObject().put("text", content);
                root.put("stopReason", cut ? "max_tokens" : "end_turn");
                ObjectNode usage = root.putObject("usage").put("inputTokens", u.input()).put("outputTokens", u.output())
                        .put("totalTokens", u.input() + u.output());
                if (u.cached() > 0) {
                    usage.put("cacheReadInputTokens", u.cached());
                }
                root.putObject("metrics").put("latencyMs", 1);
            }
        }
        return root.toString();
    }

    // ---- rate limits ---------------------------------------------------------------------------

    /**
     * A 429 of a token limit, or of the request limit for the APIs other than OpenAI's (whose
     * request 429 the endpoint words itself, as it always has), in the API's real shape; the
     * rate-limit headers come from the endpoint. {@code model} names the model in OpenAI's and
     * Gemini's words.
     */
    Reply tooMany(Api api, Refusal r, String model, Map<String, String> limitHeaders) {
        Map<String, String> h = new LinkedHashMap<>(limitHeaders);
        long retry = Math.max(1, (long) Math.ceil(r.waitSeconds()));
        return switch (api) {
            case OPENAI_CHAT -> {
                h.put("retry-after", String.valueOf(retry));
                yield new Reply(429, h, openAiTooMany(r, model));
            }
            case ANTHROPIC_MESSAGES -> {
                h.put("retry-after", String.valueOf(retry));
                yield new Reply(429, h, anthropicError("rate_limit_error", "This request would exceed the rate limit "
                        + "for your organization (" + ORG + ") of " + String.format(Locale.ROOT, "%,d", r.limitPerMinute())
                        + " " + anthropicUnit(r.dimension()) + " per minute. " + ANTHROPIC_DOCS));
            }
            case GEMINI_GENERATE_CONTENT -> new Reply(429, h, geminiTooMany(r, model));
            case BEDROCK_CONVERSE -> bedrockThrottled(r.dimension());
        };
    }

    /**
     * A 429 that states no limit at all: no numbers in the message, no rate-limit headers, no
     * retry-after (Gemini's Vertex shape, Bedrock's shape, an OpenAI-compatible server's).
     */
    Reply tooManyStatingNothing(Api api, Dimension d) {
        return switch (api) {
            case OPENAI_CHAT -> new Reply(429, Map.of(), openAiError("Rate limit exceeded. Please try again later.",
                    "rate_limit_exceeded", "rate_limit_exceeded", null));
            case ANTHROPIC_MESSAGES -> new Reply(429, Map.of(), anthropicError("rate_limit_error",
                    "Rate limited. Please try again later."));
            case GEMINI_GENERATE_CONTENT -> new Reply(429, Map.of(), geminiError(429, "RESOURCE_EXHAUSTED",
                    "Resource exhausted. Please try again later. Please refer to "
                            + "https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details."));
            case BEDROCK_CONVERSE -> bedrockThrottled(d);
        };
    }

    /**
     * The endpoint's own OpenAI 429 ("Rate limit reached ... on requests per min (RPM): Limit ...",
     * or the throttled phase's), and the throttled phase's 429 in the other APIs: a stated wait.
     */
    Reply throttled(Api api, String openAiMessage, double waitSeconds, Map<String, String> limitHeaders) {
        Map<String, String> h = new LinkedHashMap<>(limitHeaders);
        long retry = Math.max(1, (long) Math.ceil(waitSeconds));
        return switch (api) {
            case OPENAI_CHAT -> {
                h.put("retry-after", String.valueOf(retry));
                yield new Reply(429, h, openAiError(openAiMessage, "requests", "rate_limit_exceeded", null));
            }
            case ANTHROPIC_MESSAGES -> {
                h.put("retry-after", String.valueOf(retry));
                yield new Reply(429, h, anthropicError("rate_limit_error", "Number of requests has exceeded your "
                        + "per-minute rate limit (https://docs.anthropic.com/en/api/rate-limits); see the response "
                        + "headers for current usage."));
            }
            case GEMINI_GENERATE_CONTENT -> {
                ObjectNode root = geminiErrorNode(429, "RESOURCE_EXHAUSTED",
                        "Resource has been exhausted (e.g. check quota). Please retry in " + seconds(waitSeconds) + "s.");
                error(root).putArray("details").addObject().put("@type", "type.googleapis.com/google.rpc.RetryInfo")
                        .put("retryDelay", retry + "s");
                yield new Reply(429, h, root.toString());
            }
            case BEDROCK_CONVERSE -> bedrockThrottled(Dimension.REQUESTS);
        };
    }

    private String openAiTooMany(Refusal r, String model) {
        if (r.neverFits()) {
            return openAiError("Request too large for " + model + " in organization " + ORG
                    + " on tokens per min (TPM): Limit " + r.limitPerMinute() + ", Requested " + r.requested()
                    + ". The input or output tokens must be reduced in order to run successfully. " + OPENAI_DOCS,
                    "tokens", "rate_limit_exceeded", null);
        }
        // OpenAI has one token limit (TPM); the fake names an input or output limit the same way
        return openAiError("Rate limit reached for " + model + " in organization " + ORG + " on tokens per min (TPM): "
                + "Limit " + r.limitPerMinute() + ", Used " + r.used() + ", Requested " + r.requested()
                + ". Please try again in " + FakeProvider.resetFormat(r.waitSeconds()) + ". " + OPENAI_DOCS,
                "tokens", "rate_limit_exceeded", null);
    }

    private String geminiTooMany(Refusal r, String model) {
        boolean requests = r.dimension() == Dimension.REQUESTS;
        String kind = requests ? "requests" : r.dimension() == Dimension.OUTPUT_TOKENS ? "output_token_count"
                : "input_token_count";
        String metric = "generativelanguage.googleapis.com/generate_content_paid_tier_" + kind;
        String quotaId = requests ? "GenerateRequestsPerMinutePerProjectPerModel"
                : r.dimension() == Dimension.OUTPUT_TOKENS ? "GenerateContentPaidTierOutputTokensPerModelPerMinute"
                : "GenerateContentPaidTierInputTokensPerModelPerMinute";
        ObjectNode root = geminiErrorNode(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check "
                + "your plan and billing details. For more information on this error, head to: "
                + "https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric: " + metric
                + ", limit: " + r.limitPerMinute() + ", model: " + model + "\nPlease retry in " + seconds(r.waitSeconds())
                + "s.");
        ArrayNode details = error(root).putArray("details");
        ObjectNode violation = details.addObject().put("@type", "type.googleapis.com/google.rpc.QuotaFailure")
                .putArray("violations").addObject().put("quotaMetric", metric).put("quotaId", quotaId);
        violation.putObject("quotaDimensions").put("location", "global").put("model", model);
        violation.put("quotaValue", String.valueOf(r.limitPerMinute()));
        details.addObject().put("@type", "type.googleapis.com/google.rpc.Help").putArray("links").addObject()
                .put("description", "Learn more about Gemini API quotas")
                .put("url", "https://ai.google.dev/gemini-api/docs/rate-limits");
        details.addObject().put("@type", "type.googleapis.com/google.rpc.RetryInfo")
                .put("retryDelay", Math.max(1, (long) Math.ceil(r.waitSeconds())) + "s");
        return root.toString();
    }

    private Reply bedrockThrottled(Dimension d) {
        String what = d == Dimension.REQUESTS ? "requests" : "tokens";
        return new Reply(429, Map.of("x-amzn-ErrorType", "ThrottlingException" + BEDROCK_ERROR_TYPE),
                bedrockError("Too many " + what + ", please wait before trying again."));
    }

    private static String anthropicUnit(Dimension d) {
        return switch (d) {
            case REQUESTS -> "requests";
            case TOKENS -> "tokens";
            case INPUT_TOKENS -> "input tokens";
            case OUTPUT_TOKENS -> "output tokens";
        };
    }

    // ---- the other phases ------------------------------------------------------------------------

    /** 503: the provider is down. */
    Reply outage(Api api) {
        return switch (api) {
            case OPENAI_CHAT -> new Reply(503, Map.of(), openAiError("The server is overloaded or not ready yet.",
                    "server_error", null, null));
            case ANTHROPIC_MESSAGES -> new Reply(503, Map.of(), anthropicError("api_error", "Service Unavailable"));
            case GEMINI_GENERATE_CONTENT -> new Reply(503, Map.of(), geminiError(503, "UNAVAILABLE",
                    "The model is overloaded. Please try again later."));
            case BEDROCK_CONVERSE -> new Reply(503, Map.of("x-amzn-ErrorType", "ServiceUnavailableException"
                    + BEDROCK_ERROR_TYPE), bedrockError("Bedrock is unable to process your request."));
        };
    }

    /** 500: the provider failed on its side, in the API's shape. */
    Reply serverError(Api api) {
        return switch (api) {
            case OPENAI_CHAT -> new Reply(500, Map.of(), openAiError("The server had an error while processing your "
                    + "request. Sorry about that!", "server_error", null, null));
            case ANTHROPIC_MESSAGES -> new Reply(500, Map.of(), anthropicError("api_error", "Internal server error"));
            case GEMINI_GENERATE_CONTENT -> new Reply(500, Map.of(), geminiError(500, "INTERNAL",
                    "An internal error has occurred. Please retry or report in "
                    + "https://developers.generativeai.google/guide/troubleshooting"));
            case BEDROCK_CONVERSE -> new Reply(500, Map.of("x-amzn-ErrorType", "InternalServerException"
                    + BEDROCK_ERROR_TYPE), bedrockError("The server encountered an internal error while processing "
                    + "the request."));
        };
    }

    /** 529: Anthropic's {@code overloaded_error}, whatever the API. */
    Reply overloaded() {
        return new Reply(529, Map.of(), anthropicError("overloaded_error", "Overloaded"));
    }

    /** 400: the request is malformed. */
    Reply rejecting(Api api) {
        return switch (api) {
            case OPENAI_CHAT -> new Reply(400, Map.of(), openAiError(
                    "Invalid value for 'messages': the request is malformed.", "invalid_request_error", null, "messages"));
            case ANTHROPIC_MESSAGES -> new Reply(400, Map.of(), anthropicError("invalid_request_error",
                    "messages: the request is malformed"));
            case GEMINI_GENERATE_CONTENT -> new Reply(400, Map.of(), geminiError(400, "INVALID_ARGUMENT",
                    "Request contains an invalid argument."));
            case BEDROCK_CONVERSE -> new Reply(400, Map.of("x-amzn-ErrorType", "ValidationException" + BEDROCK_ERROR_TYPE),
                    bedrockError("Malformed input request, please reformat your input and try again."));
        };
    }

    /** The key is refused: 401 (OpenAI, Anthropic), Gemini's 400 {@code API_KEY_INVALID}, Bedrock's 403. */
    Reply unauthorized(Api api) {
        return switch (api) {
            case OPENAI_CHAT -> new Reply(401, Map.of(), openAiError("Incorrect API key provided: sk-fake****. You can "
                    + "find your API key at https://platform.openai.com/account/api-keys.", "invalid_request_error",
                    "invalid_api_key", null));
            case ANTHROPIC_MESSAGES -> new Reply(401, Map.of(), anthropicError("authentication_error", "invalid x-api-key"));
            case GEMINI_GENERATE_CONTENT -> {
                ObjectNode root = geminiErrorNode(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.");
                error(root).putArray("details").addObject().put("@type", "type.googleapis.com/google.rpc.ErrorInfo")
                        .put("reason", "API_KEY_INVALID").put("domain", "googleapis.com");
                yield new Reply(400, Map.of(), root.toString());
            }
            case BEDROCK_CONVERSE -> new Reply(403, Map.of("x-amzn-ErrorType", "UnrecognizedClientException"
                    + BEDROCK_ERROR_TYPE), bedrockError("The security token included in the request is invalid."));
        };
    }

    /** 404 for a path the fake does not serve, in OpenAI's shape. */
    String unknownUrl() {
        return openAiError("Unknown request URL", "invalid_request_error", "unknown_url", null);
    }

    // ---- error bodies ----------------------------------------------------------------------------

    String openAiError(String message, String type, String code, String param) {
        ObjectNode root = json.createObjectNode();
        ObjectNode e = root.putObject("error").put("message", message).put("type", type);
        if (param == null) {
            e.putNull("param");
        } else {
            e.put("param", param);
        }
        if (code == null) {
            e.putNull("code");
        } else {
            e.put("code", code);
        }
        return root.toString();
    }

    String anthropicError(String type, String message) {
        ObjectNode root = json.createObjectNode().put("type", "error");
        root.putObject("error").put("type", type).put("message", message);
        return root.put("request_id", "req_fake").toString();
    }

    private ObjectNode geminiErrorNode(int code, String status, String message) {
        ObjectNode root = json.createObjectNode();
        root.putObject("error").put("code", code).put("message", message).put("status", status);
        return root;
    }

    private String geminiError(int code, String status, String message) {
        return geminiErrorNode(code, status, message).toString();
    }

    private String bedrockError(String message) {
        return json.createObjectNode().put("message", message).toString();
    }

    private static ObjectNode error(ObjectNode root) {
        return (ObjectNode) root.get("error");
    }

    private static String seconds(double s) {
        return String.format(Locale.ROOT, "%.3f", Math.max(0.001, s));
    }
}
