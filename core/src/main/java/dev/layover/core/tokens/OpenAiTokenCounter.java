package dev.layover.core.tokens;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.ToIntFunction;

/**
 * Counts the tokens of an OpenAI prompt with the model's own tokenizer (jtokkit), before the
 * call. Text is counted exactly; a chat prompt adds the chat format's tokens by the rule of
 * OpenAI's cookbook ("How to count tokens with tiktoken", section 6): 3 tokens per message, 1 more
 * for a message with a name, and 3 to prime the reply. The cookbook checks the rule against the
 * usage the API reports (129 prompt tokens for its example on gpt-4-0613, 124 on gpt-4o and
 * gpt-4o-mini); {@code OpenAiTokenCounterTest} checks the same numbers. Tool definitions and
 * images are not counted.
 *
 * <p>jtokkit ({@code com.knuddels:jtokkit}) is an optional dependency of Layover: this class
 * loads, and {@link #encodingFor(String)} works, without it; making a counter without it throws
 * an {@link IllegalStateException} that says so. Instances are immutable and thread-safe; the
 * vocabulary of each encoding is loaded once, on first use, and shared.
 */
public final class OpenAiTokenCounter implements TokenEstimator {

    /** The encoding of the gpt-4o, gpt-4.1, gpt-4.5, o-series and gpt-5 families. */
    public static final String O200K_BASE = "o200k_base";

    /** The encoding of gpt-4, gpt-3.5 and the text-embedding models. */
    public static final String CL100K_BASE = "cl100k_base";

    static final int TOKENS_PER_MESSAGE = 3;
    static final int TOKENS_PER_NAME = 1;
    static final int REPLY_PRIMING = 3;

    private static final List<String> O200K_FAMILIES = List.of("gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5",
            "gpt-5", "o1", "o3", "o4", "gpt-oss", "gpt-realtime", "gpt-audio", "codex");
    private static final List<String> CL100K_FAMILIES = List.of("gpt-4", "gpt-3.5", "gpt-35", "text-embedding-3",
            "text-embedding-ada-002", "davinci-002", "babbage-002");

    private static final Map<String, ToIntFunction<String>> COUNTERS = new ConcurrentHashMap<>();

    private final String encoding;
    private final ToIntFunction<String> counter;

    private OpenAiTokenCounter(String encoding, ToIntFunction<String> counter) {
        this.encoding = encoding;
        this.counter = counter;
    }

    /**
     * The counter for a model ({@link #encodingFor(String)}).
     *
     * @param model the model name
     * @return the counter
     * @throws IllegalStateException if jtokkit is not on the classpath
     */
    public static OpenAiTokenCounter forModel(String model) {
        return forEncoding(encodingFor(model));
    }

    /**
     * The counter for an encoding by its tiktoken name.
     *
     * @param encoding {@code o200k_base}, {@code cl100k_base}, {@code p50k_base} or
     *     {@code r50k_base}
     * @return the counter
     * @throws IllegalArgumentException if the encoding is not one of those
     * @throws IllegalStateException if jtokkit is not on the classpath
     */
    public static OpenAiTokenCounter forEncoding(String encoding) {
        Objects.requireNonNull(encoding, "encoding");
        try {
            return new OpenAiTokenCounter(encoding, COUNTERS.computeIfAbsent(encoding, Jtokkit::counter));
        } catch (LinkageError e) {
            throw new IllegalStateException("Counting OpenAI tokens needs jtokkit on the classpath: add the "
                    + "dependency com.knuddels:jtokkit:1.1.0, or use TokenEstimator.approximate()", e);
        }
    }

    /**
     * The tokenizer of an OpenAI model, by its family: {@link #O200K_BASE} for gpt-4o, gpt-4.1,
     * gpt-4.5, gpt-5, o1, o3, o4 (and their dated, mini and nano variants), {@link #CL100K_BASE}
     * for gpt-4, gpt-4-turbo, gpt-3.5 (Azure's {@code gpt-35} too) and the embedding models, and
     * {@link #O200K_BASE}, the current models' encoding, for any other name. A fine-tuned
     * {@code ft:BASE:org::id} and a routed {@code openai/BASE} are looked up by BASE.
     *
     * @param model the model name; {@code null} or blank gives {@link #O200K_BASE}
     * @return the encoding's tiktoken name
     */
    public static String encodingFor(String model) {
        if (model == null || model.isBlank()) {
            return O200K_BASE;
        }
        String m = model.strip().toLowerCase(Locale.ROOT);
        if (m.startsWith("ft:")) {
            int end = m.indexOf(':', 3);
            m = end < 0 ? m.substring(3) : m.substring(3, end);
        }
        m = m.substring(m.lastIndexOf('/') + 1);
        for (String family : O200K_FAMILIES) {
            if (m.startsWith(family)) {
                return O200K_BASE;
            }
        }
        for (String family : CL100K_FAMILIES) {
            if (m.startsWith(family)) {
                return CL100K_BASE;
            }
        }
        return O200K_BASE;
    }

    /** @return the tiktoken name of this counter's encoding */
    public String encoding() {
        return encoding;
    }

    @Override
    public long textTokens(String text) {
        return text == null || text.isEmpty() ? 0 : counter.applyAsInt(text);
    }

    @Override
    public long messageTokens(List<ChatMessage> messages) {
        long tokens = REPLY_PRIMING;
        if (messages == null) {
            return tokens;
        }
        for (ChatMessage m : messages) {
            if (m == null) {
                continue;
            }
            tokens += TOKENS_PER_MESSAGE + textTokens(m.role()) + textTokens(m.content());
            if (m.name() != null) {
                tokens += TOKENS_PER_NAME + textTokens(m.name());
            }
        }
        return tokens;
    }

    @Override
    public String toString() {
        return "OpenAiTokenCounter[" + encoding + "]";
    }
}
