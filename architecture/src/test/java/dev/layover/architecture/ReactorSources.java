package dev.layover.architecture;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The reactor's source files, for the rules that read them ({@link TableOwnersTest}, {@link TestTiersTest}, {@link DocNamesTest}, {@link BoundariesTest}). */
final class ReactorSources {

    private ReactorSources() {}

    /** @return the reactor's root: the nearest directory up from here with {@code core/pom.xml} */
    static Path reactorRoot() {
        Path p = Path.of("").toAbsolutePath();
        while (p != null && !Files.exists(p.resolve("core/pom.xml"))) {
            p = p.getParent();
        }
        if (p == null) {
            throw new IllegalStateException("run from inside the Layover reactor");
        }
        return p;
    }

    /** @return the file's text */
    static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
