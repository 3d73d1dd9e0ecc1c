package dev.layover.core.tokens;

import java.util.Objects;

/**
 * One message of a chat prompt, for counting its tokens ({@link TokenEstimator#messageTokens}).
 *
 * @param role the author's role ({@code system}, {@code developer}, {@code user},
 *     {@code assistant}, {@code tool}); not {@code null}
 * @param content the message's text; {@code null} counts as empty
 * @param name the optional author name OpenAI's chat format allows; {@code null} when none
 */
public record ChatMessage(String role, String content, String name) {

    /**
     * @throws NullPointerException if {@code role} is {@code null}
     *
     * @param role the author's role ({@code system}, {@code developer}, {@code user}, {@code assistant},
     *     {@code tool}); not {@code null}
     * @param content the message's text; {@code null} counts as empty
     * @param name the optional author name OpenAI's chat format allows; {@code null} when none
     */
    public ChatMessage {
        Objects.requireNonNull(role, "role");
        content = content == null ? "" : content;
    }

    /**
     * @param content the text
     * @return a {@code system} message
     */
    public static ChatMessage system(String content) {
        return new ChatMessage("system", content, null);
    }

    /**
     * @param content the text
     * @return a {@code user} message
     */
    public static ChatMessage user(String content) {
        return new ChatMessage("user", content, null);
    }

    /**
     * @param content the text
     * @return an {@code assistant} message
     */
    public static ChatMessage assistant(String content) {
        return new ChatMessage("assistant", content, null);
    }
}
