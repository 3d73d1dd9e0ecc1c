package dev.layover.core.tokens;

import java.util.Optional;

/**
 * Hands an SDK response object to the reader of its SDK. No SDK type appears here: a reader
 * class, which does use its SDK's types, is only loaded once an object of that SDK is seen.
 */
final class SdkUsage {

    private SdkUsage() {}

    static Optional<TokenUsage> read(Object response) {
        if (response == null) {
            return Optional.empty();
        }
        if (response instanceof TokenUsage u) {
            return Optional.of(u);
        }
        try {
            return switch (Sdk.of(response.getClass())) {
                case OPENAI -> OpenAiUsage.read(response);
                case ANTHROPIC -> AnthropicUsage.read(response);
                case GOOGLE_GENAI -> GenAiUsage.read(response);
                case AWS -> BedrockUsage.read(response);
                case NONE -> Optional.empty();
            };
        } catch (LinkageError | RuntimeException e) {
            // the SDK is not visible to Layover's class loader, has changed shape, or the response
            // holds counts the SDK cannot give or TokenUsage does not accept: no usage
            return Optional.empty();
        }
    }

    /** Which SDK a class belongs to, by the names of the class and its superclasses. */
    enum Sdk {
        OPENAI("com.openai."),
        ANTHROPIC("com.anthropic."),
        GOOGLE_GENAI("com.google.genai."),
        AWS("software.amazon.awssdk."),
        NONE("");

        private final String prefix;

        Sdk(String prefix) {
            this.prefix = prefix;
        }

        static Sdk of(Class<?> type) {
            for (Class<?> c = type; c != null && c != Object.class; c = c.getSuperclass()) {
                String name = c.getName();
                for (Sdk s : values()) {
                    if (s != NONE && name.startsWith(s.prefix)) {
                        return s;
                    }
                }
            }
            return NONE;
        }
    }
}
