package dev.layover.core.tokens;

import com.knuddels.jtokkit.Encodings;
import com.knuddels.jtokkit.api.Encoding;
import com.knuddels.jtokkit.api.EncodingRegistry;
import com.knuddels.jtokkit.api.EncodingType;
import java.util.function.ToIntFunction;

/**
 * The only class that uses jtokkit's types; loaded when an {@link OpenAiTokenCounter} is first
 * made. The registry loads each encoding's vocabulary on first use.
 */
final class Jtokkit {

    private static final EncodingRegistry REGISTRY = Encodings.newLazyEncodingRegistry();

    private Jtokkit() {}

    /** Counts a text's tokens with an encoding, special tokens like {@code <|endoftext|>} as plain text. */
    static ToIntFunction<String> counter(String encodingName) {
        EncodingType type = EncodingType.fromName(encodingName)
                .orElseThrow(() -> new IllegalArgumentException("unknown encoding " + encodingName));
        Encoding encoding = REGISTRY.getEncoding(type);
        return encoding::countTokensOrdinary;
    }
}
