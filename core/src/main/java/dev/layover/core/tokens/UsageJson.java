package dev.layover.core.tokens;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.core.provider.Provider;
import java.util.Optional;

/**
 * Reads usage from a provider's raw response body: one JSON document, a JSON array of them
 * (Gemini's {@code streamGenerateContent}) or a server-sent event stream. The shape of each
 * document tells which provider's fields to read; see {@link TokenUsage#fromJson}.
 */
final class UsageJson {

    private static final ObjectMapper JSON = new ObjectMapper();

    private UsageJson() {}

    /** A usage count that is not a whole number from 0 to {@link TokenUsage#MAX_COUNT}. */
    private static final class Unreadable extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Unreadable() {
            super(null, null, false, false);
        }
    }

    /**
     * Counts in one convention for every shape: {@code totalInput} includes the cache reads and
     * writes. {@code shape} is the provider whose fields they were read from.
     */
    record Counts(Provider shape, long totalInput, long output, long cacheRead, long cacheWrite) {

        Counts max(Counts o) {
            if (o == null) {
                return this;
            }
            return new Counts(shape, Math.max(totalInput, o.totalInput), Math.max(output, o.output),
                    Math.max(cacheRead, o.cacheRead), Math.max(cacheWrite, o.cacheWrite));
        }

        TokenUsage toUsage(Provider asked) {
            Provider p;
            if (asked == null || asked == Provider.UNKNOWN) {
                p = shape;
            } else if (asked == Provider.BEDROCK && shape == Provider.ANTHROPIC) {
                p = Provider.ANTHROPIC_BEDROCK;
            } else {
                p = asked;
            }
            return TokenUsage.fromTotals(p, totalInput, output, cacheRead, cacheWrite);
        }
    }

    static Optional<TokenUsage> read(Provider provider, String body) {
        if (body == null || body.isBlank()) {
            return Optional.empty();
        }
        try {
            String text = body.strip();
            Counts c;
            if (text.startsWith("{") || text.startsWith("[")) {
                c = counts(provider, JSON.readTree(text));
            } else {
                c = events(provider, text);
            }
            return c == null ? Optional.empty() : Optional.of(c.toUsage(provider));
        } catch (Exception | StackOverflowError e) {
            // not JSON, a count out of range, or a shape TokenUsage refuses: no usage
            return Optional.empty();
        }
    }

    /** The merged counts of a server-sent event stream's {@code data} fields. */
    private static Counts events(Provider provider, String stream) {
        Counts merged = null;
        StringBuilder data = new StringBuilder();
        for (String line : (Iterable<String>) stream.lines()::iterator) {
            if (line.isEmpty()) {
                merged = merge(merged, event(provider, data));
                data.setLength(0);
            } else if (line.startsWith("data:")) {
                String value = line.substring(5);
                if (value.startsWith(" ")) {
                    value = value.substring(1);
                }
                if (data.length() > 0) {
                    data.append('\n');
                }
                data.append(value);
            }
        }
        return merge(merged, event(provider, data));
    }

    private static Counts event(Provider provider, CharSequence data) {
        String text = data.toString().strip();
        // most events of a long stream are text deltas: parse only those that may carry usage
        if (!text.startsWith("{") && !text.startsWith("[")
                || !text.contains("sage") && !text.contains("TokenCount") && !text.contains("token_count")) {
            return null;
        }
        JsonNode node;
        try {
            node = JSON.readTree(text);
        } catch (Exception e) {
            // an event that may carry the usage but cannot be read: the stream's usage is unknown
            throw new Unreadable();
        }
        return counts(provider, node);
    }

    private static Counts merge(Counts a, Counts b) {
        return a == null ? b : a.max(b);
    }

    static Counts counts(Provider provider, JsonNode root) {
        if (root == null) {
            return null;
        }
        if (root.isArray()) {
            Counts merged = null;
            for (JsonNode element : root) {
                merged = merge(merged, counts(provider, element));
            }
            return merged;
        }
        if (!root.isObject()) {
            return null;
        }
        String type = root.path("type").asText("");
        if (type.equals("message_start")) {
            return anthropic(root.path("message").path("usage"));
        }
        if (type.startsWith("response.") && root.path("response").isObject()) {
            return counts(provider, root.get("response"));
        }
        Counts c = null;
        JsonNode metrics = root.path("amazon-bedrock-invocationMetrics");
        if (metrics.isObject()) {
            c = bedrockMetrics(metrics);
        }
        JsonNode gemini = root.path("usageMetadata");
        if (gemini.isObject()) {
            return merge(c, gemini(gemini));
        }
        JsonNode usage = root.path("usage");
        if (usage.isObject()) {
            return merge(c, usage(provider, root, usage));
        }
        if (root.has("prompt_token_count") || root.has("generation_token_count")) {
            long in = count(root, "prompt_token_count");
            return merge(c, new Counts(Provider.BEDROCK, in, count(root, "generation_token_count"), 0, 0));
        }
        if (root.has("inputTextTokenCount")) {
            long out = 0;
            for (JsonNode result : root.path("results")) {
                out += count(result, "tokenCount");
            }
            return merge(c, new Counts(Provider.BEDROCK, count(root, "inputTextTokenCount"), out, 0, 0));
        }
        return c;
    }

    private static Counts usage(Provider provider, JsonNode root, JsonNode u) {
        if (u.has("prompt_tokens") || u.has("completion_tokens")) {
            return openAiChat(u);
        }
        if (u.has("inputTokens") || u.has("outputTokens")) {
            return bedrockConverse(u);
        }
        if (u.has("input_tokens") || u.has("output_tokens")) {
            return isResponsesApi(provider, root, u) ? openAiResponses(u) : anthropic(u);
        }
        return null;
    }

    /** OpenAI's Responses API and Anthropic both say {@code input_tokens}, meaning different things. */
    private static boolean isResponsesApi(Provider provider, JsonNode root, JsonNode u) {
        if (provider == Provider.OPENAI || provider == Provider.AZURE_OPENAI) {
            return true;
        }
        if (provider == Provider.ANTHROPIC || provider == Provider.ANTHROPIC_BEDROCK || provider == Provider.BEDROCK) {
            return false;
        }
        return u.has("input_tokens_details") || u.has("output_tokens_details") || u.has("total_tokens")
                || root.path("object").asText("").equals("response");
    }

    /** {@code prompt_tokens} includes {@code prompt_tokens_details.cached_tokens}. */
    private static Counts openAiChat(JsonNode u) {
        JsonNode details = u.path("prompt_tokens_details");
        return new Counts(Provider.OPENAI, count(u, "prompt_tokens"), count(u, "completion_tokens"),
                count(details, "cached_tokens"), count(details, "cache_write_tokens"));
    }

    /** {@code input_tokens} includes {@code input_tokens_details.cached_tokens}. */
    private static Counts openAiResponses(JsonNode u) {
        JsonNode details = u.path("input_tokens_details");
        return new Counts(Provider.OPENAI, count(u, "input_tokens"), count(u, "output_tokens"),
                count(details, "cached_tokens"), count(details, "cache_write_tokens"));
    }

    /** {@code input_tokens} excludes the cache reads and writes. */
    private static Counts anthropic(JsonNode u) {
        if (!u.isObject()) {
            return null;
        }
        long read = count(u, "cache_read_input_tokens");
        long written = count(u, "cache_creation_input_tokens");
        return new Counts(Provider.ANTHROPIC, count(u, "input_tokens") + read + written, count(u, "output_tokens"),
                read, written);
    }

    /** {@code promptTokenCount} includes {@code cachedContentTokenCount}. */
    private static Counts gemini(JsonNode m) {
        if (!m.has("promptTokenCount") && !m.has("candidatesTokenCount") && !m.has("totalTokenCount")) {
            return null;
        }
        long in = count(m, "promptTokenCount") + count(m, "toolUsePromptTokenCount");
        long out = count(m, "candidatesTokenCount") + count(m, "thoughtsTokenCount");
        return new Counts(Provider.GEMINI, in, out, count(m, "cachedContentTokenCount"), 0);
    }

    /**
     * Converse's {@code inputTokens} excludes the cache reads and writes; Amazon Nova's InvokeModel
     * body names them {@code cacheReadInputTokenCount} and {@code cacheWriteInputTokenCount}.
     */
    private static Counts bedrockConverse(JsonNode u) {
        long read = count(u, "cacheReadInputTokens") + count(u, "cacheReadInputTokenCount");
        long written = count(u, "cacheWriteInputTokens") + count(u, "cacheWriteInputTokenCount");
        return new Counts(Provider.BEDROCK, count(u, "inputTokens") + read + written, count(u, "outputTokens"), read,
                written);
    }

    /** The metrics Bedrock adds to the last chunk of InvokeModelWithResponseStream. */
    private static Counts bedrockMetrics(JsonNode m) {
        long read = count(m, "cacheReadInputTokenCount");
        long written = count(m, "cacheWriteInputTokenCount");
        return new Counts(Provider.BEDROCK, count(m, "inputTokenCount") + read + written, count(m, "outputTokenCount"),
                read, written);
    }

    /**
     * A count: 0 when absent or {@code null}; a whole number from 0 to {@link TokenUsage#MAX_COUNT}
     * (also written as {@code 12.0}); anything else makes the whole usage unreadable.
     */
    private static long count(JsonNode parent, String field) {
        JsonNode n = parent.get(field);
        if (n == null || n.isNull() || n.isMissingNode()) {
            return 0;
        }
        if (!n.isNumber() || !n.canConvertToExactIntegral() || !n.canConvertToLong()) {
            throw new Unreadable();
        }
        long v = n.longValue();
        if (!TokenUsage.valid(v)) {
            throw new Unreadable();
        }
        return v;
    }
}
