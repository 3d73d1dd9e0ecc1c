package dev.layover.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.PureTest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * No page of the documentation sends a reader to a place that does not exist: every relative link
 * of README.md, CONTRIBUTING.md, CHANGELOG.md and docs/*.md names a file or folder of the source
 * tree, and no page names the project's future public repository (it does not exist yet).
 */
@PureTest
class DocLinksTest {

    private static final Path ROOT = Path.of("..");
    private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)\\)");

    private static List<Path> pages() throws Exception {
        List<Path> pages = new ArrayList<>(List.of(ROOT.resolve("README.md"), ROOT.resolve("CONTRIBUTING.md"),
                ROOT.resolve("CHANGELOG.md")));
        try (Stream<Path> docs = Files.list(ROOT.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
        }
        return pages;
    }

    @Test
    void everyRelativeLinkNamesAFileOfTheSourceTree() throws Exception {
        List<String> broken = new ArrayList<>();
        int checked = 0;
        for (Path page : pages()) {
            Matcher m = LINK.matcher(Files.readString(page));
            while (m.find()) {
                String target = m.group(1);
                if (target.startsWith("http://") || target.startsWith("https://") || target.startsWith("#")
                        || target.startsWith("mailto:")) {
                    continue;
                }
                String file = target.contains("#") ? target.substring(0, target.indexOf('#')) : target;
                checked++;
                if (!Files.exists(page.getParent().resolve(file).normalize())) {
                    broken.add(ROOT.relativize(page) + ": " + target);
                }
            }
        }
        assertTrue(checked > 50, checked + " links checked");
        assertEquals(List.of(), broken, "links to files that do not exist");
    }

    @Test
    void noPageNamesARepositoryThatDoesNotExistYet() throws Exception {
        List<String> found = new ArrayList<>();
        for (Path page : pages()) {
            if (Files.readString(page).contains("github.com/layover-dev")) {
                found.add(ROOT.relativize(page).toString());
            }
        }
        assertEquals(List.of(), found, "pages naming github.com/layover-dev, which does not exist yet");
    }
}
