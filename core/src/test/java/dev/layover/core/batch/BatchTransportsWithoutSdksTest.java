package dev.layover.core.batch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.testing.PureTest;
import java.io.InputStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The SDKs are optional dependencies of core: the batch SPI loads without any of them, and each
 * transport names only its own SDK, so an application with one SDK can use its transport.
 */
@PureTest
class BatchTransportsWithoutSdksTest {

    @Test
    void theSpiLoadsWithoutAnySdk() throws Exception {
        URL[] urls = {location(BatchTransport.class), location(ObjectMapper.class), location(JsonFactory.class),
            location(JsonInclude.class)};
        try (URLClassLoader loader = new URLClassLoader(urls, ClassLoader.getPlatformClassLoader())) {
            assertThrows(ClassNotFoundException.class, () -> loader.loadClass("com.openai.client.OpenAIClient"));
            assertThrows(ClassNotFoundException.class, () -> loader.loadClass("com.anthropic.client.AnthropicClient"));
            assertThrows(ClassNotFoundException.class, () -> loader.loadClass("com.google.genai.Client"));
            assertThrows(ClassNotFoundException.class,
                    () -> loader.loadClass("software.amazon.awssdk.services.s3.S3Client"));
            for (Class<?> c : List.of(BatchTransport.class, BatchLine.class, BatchProgress.class,
                    BatchProgress.State.class, BatchResultLine.class, BatchResultLine.Kind.class, BatchLines.class,
                    BatchStorage.class)) {
                Class<?> isolated = Class.forName(c.getName(), true, loader);
                assertTrue(isolated != c, "loaded in isolation: " + c.getName());
            }
            Object line = loader.loadClass(BatchLine.class.getName()).getConstructor(String.class, String.class)
                    .newInstance("lo-1", "{}");
            assertEquals("lo-1", line.getClass().getMethod("customId").invoke(line));
        }
    }

    @Test
    void eachTransportNamesOnlyItsOwnSdk() throws Exception {
        String openAi = classFile(OpenAiBatches.class);
        String anthropic = classFile(AnthropicBatches.class);
        assertTrue(openAi.contains("com/openai/"), "the check reads the constant pool");
        assertFalse(openAi.contains("com/anthropic/"));
        assertTrue(anthropic.contains("com/anthropic/"));
        assertFalse(anthropic.contains("com/openai/"));
        assertFalse(anthropic.contains(OpenAiBatches.class.getName().replace('.', '/')),
                "AnthropicBatches does not load OpenAiBatches");
        String gemini = classFile(GeminiBatches.class);
        assertTrue(gemini.contains("com/google/genai/"));
        assertFalse(gemini.contains("com/openai/") || gemini.contains("com/anthropic/") || gemini.contains("awssdk"));
        String bedrock = classFile(BedrockBatches.class);
        assertTrue(bedrock.contains("software/amazon/awssdk/services/bedrock/"));
        assertFalse(bedrock.contains("software/amazon/awssdk/services/s3/"),
                "BedrockBatches takes any BatchStorage: the S3 SDK is S3BatchStorage's alone");
        assertFalse(bedrock.contains("com/google/genai/") || bedrock.contains("com/openai/"));
        String s3 = classFile(S3BatchStorage.class);
        assertTrue(s3.contains("software/amazon/awssdk/services/s3/"));
        assertFalse(s3.contains("software/amazon/awssdk/services/bedrock/"));
    }

    private static String classFile(Class<?> c) throws Exception {
        try (InputStream in = c.getResourceAsStream(c.getSimpleName() + ".class")) {
            return new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
        }
    }

    private static URL location(Class<?> c) {
        return c.getProtectionDomain().getCodeSource().getLocation();
    }
}
