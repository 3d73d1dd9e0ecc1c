package dev.layover.core.tokens;

import java.util.List;

/**
 * Estimates the input tokens of a prompt before the call. The output side of a reservation is
 * the request's own ceiling ({@code max_tokens}, {@code max_output_tokens},
 * {@code maxOutputTokens}), which the caller adds.
 *
 * <ul>
 *   <li>{@link #openAi(String)}: the model's own tokenizer (jtokkit), exact for text, plus the chat
 *       format's per-message tokens;
 *   <li>{@link #approximate()}: an estimate from the text, for providers without a public
 *       tokenizer (Anthropic, Gemini, Bedrock); wrap it in a {@link CalibratedEstimator} to
 *       correct it by the usage calls report.
 * </ul>
 *
 * <p>Implementations are thread-safe, accept any text ({@code null} counts as empty) and never
 * return a negative number. Tool definitions, images and files are not counted: add their tokens,
 * or let a {@link CalibratedEstimator} learn them.
 */
public interface TokenEstimator {

    /**
     * The tokens of a plain text.
     *
     * @param text the text; {@code null} counts as empty
     * @return the tokens, 0 or more
     */
    long textTokens(String text);

    /**
     * The input tokens of a chat prompt: the messages' text plus the tokens the chat format adds
     * around each message and to prime the reply.
     *
     * @param messages the prompt; {@code null} or empty counts only the reply priming
     * @return the tokens, 0 or more
     */
    long messageTokens(List<ChatMessage> messages);

    /**
     * A counter on the tokenizer of an OpenAI model: {@code o200k_base} for the gpt-4o, gpt-4.1,
     * gpt-4.5, o-series and gpt-5 families, {@code cl100k_base} for gpt-4, gpt-3.5 and the
     * embedding models; {@code o200k_base} for a name it does not know. Needs
     * {@code com.knuddels:jtokkit} on the classpath.
     *
     * @param model the model name, e.g. {@code gpt-4o-mini-2024-07-18}; a fine-tuned
     *     {@code ft:gpt-4o-mini:org::id} is counted as its base model
     * @return the counter
     * @throws IllegalStateException if jtokkit is not on the classpath (the message says which
     *     dependency to add)
     */
    static TokenEstimator openAi(String model) {
        return OpenAiTokenCounter.forModel(model);
    }

    /**
     * The estimate from the text alone ({@link TextEstimator#defaults()}).
     *
     * @return the shared estimator
     */
    static TokenEstimator approximate() {
        return TextEstimator.defaults();
    }
}
