package dev.layover.core.tokens;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.ToIntFunction;

/**
 * Texts of many languages and kinds, built from sentences written for this test, to measure how
 * far a token estimate is from a real tokenizer's count. A text of a kind is a seeded random draw
 * of its sentences, in paragraphs, until it reaches the size asked for.
 */
final class Corpus {

    /** One text of the corpus. */
    record Text(String kind, String text) {}

    /** Sentences by kind: natural languages, source code, JSON, a table of numbers, mixed. */
    static final List<Kind> KINDS = List.of(
            new Kind("en", " ", List.of(
                    "The morning train to the coast was late again, so most of us waited in the small cafe by the platform.",
                    "She wrote down every number in a notebook, because the spreadsheet had lost her work twice that week.",
                    "If the weather holds, the harvest should be finished before the first frost arrives in October.",
                    "Our team reviewed the quarterly report and found that shipping costs had doubled since spring.",
                    "He asked whether the library would stay open late during the examination period.",
                    "Nobody expected the old bridge to survive the flood, yet it stood there the next morning, barely damaged.",
                    "Please send the signed contract by Friday, otherwise the delivery will be postponed until next month.",
                    "The recipe calls for two cups of flour, a pinch of salt and three eggs beaten with warm milk.")),
            new Kind("de", " ", List.of(
                    "Der Zug nach Hamburg hatte wieder eine Verspätung von fast vierzig Minuten.",
                    "Wir müssen die Unterlagen bis Donnerstag vollständig beim Finanzamt einreichen.",
                    "Im Garten blühen die Apfelbäume früher als im letzten Jahr, weil der Winter so mild war.",
                    "Die Geschäftsführung hat beschlossen, die Produktion im Werk bei Leipzig zu erweitern.",
                    "Könnten Sie mir bitte erklären, wie die neue Software für die Buchhaltung funktioniert?",
                    "Nach dem langen Spaziergang durch den Wald tranken wir heißen Tee in einer kleinen Hütte.",
                    "Die Straßenbahn fährt am Wochenende nur alle zwanzig Minuten in die Innenstadt.")),
            new Kind("fr", " ", List.of(
                    "Le marché du samedi matin attire des habitants de tous les villages voisins.",
                    "Nous avons reçu votre demande et nous vous répondrons dans les plus brefs délais.",
                    "La réunion a été déplacée à jeudi prochain, à quatorze heures, dans la grande salle.",
                    "Après la pluie, les rues étroites de la vieille ville brillaient sous les lampadaires.",
                    "Il faut préchauffer le four à deux cents degrés avant d'y mettre le gâteau.",
                    "Les élèves ont présenté leurs projets scientifiques devant un jury très attentif.",
                    "Elle préfère voyager en train, parce qu'elle peut lire tranquillement pendant le trajet.")),
            new Kind("es", " ", List.of(
                    "El autobús que va al aeropuerto sale cada media hora desde la plaza principal.",
                    "Mañana tenemos que entregar el informe final al director del departamento.",
                    "Los vecinos organizaron una fiesta en la calle para celebrar el fin del verano.",
                    "¿Sabes si la farmacia de la esquina abre los domingos por la tarde?",
                    "La empresa decidió contratar a diez ingenieros nuevos para el próximo proyecto.",
                    "Después de la tormenta, el río creció tanto que cerraron el puente durante dos días.",
                    "Mi abuela siempre preparaba una sopa de verduras cuando alguien estaba enfermo.")),
            new Kind("pl", " ", List.of(
                    "Pociąg do Krakowa odjeżdża z czwartego peronu za piętnaście minut.",
                    "W przyszłym tygodniu musimy złożyć wszystkie dokumenty w urzędzie miasta.",
                    "Jesienią liście w parku zmieniają kolor na złoty i czerwony.",
                    "Czy mógłbyś mi pomóc przenieść te ciężkie pudła do piwnicy?",
                    "Firma planuje otworzyć nowy oddział w Gdańsku na początku przyszłego roku.",
                    "Po długiej zimie wszyscy czekali na pierwsze ciepłe dni wiosny.")),
            new Kind("ru", " ", List.of(
                    "Поезд до Москвы отправляется с третьей платформы через двадцать минут.",
                    "Мы должны подготовить отчёт для руководства до конца этой недели.",
                    "Осенью в парке особенно красиво, когда листья становятся жёлтыми и красными.",
                    "Не могли бы вы объяснить, как пользоваться новой системой учёта?",
                    "После сильного дождя дорога к деревне стала почти непроходимой.",
                    "Компания открыла новый склад недалеко от аэропорта, чтобы ускорить доставку.",
                    "Бабушка всегда пекла пироги с яблоками, когда к нам приезжали гости.")),
            new Kind("el", " ", List.of(
                    "Το πλοίο για τη Σαντορίνη φεύγει από το λιμάνι κάθε πρωί στις επτά.",
                    "Πρέπει να στείλουμε την αναφορά στον διευθυντή μέχρι την Παρασκευή.",
                    "Το καλοκαίρι οι παραλίες του νησιού γεμίζουν με επισκέπτες από όλο τον κόσμο.",
                    "Μπορείτε να μου πείτε πού βρίσκεται η πλησιέστερη στάση λεωφορείου;",
                    "Η γιαγιά μου έφτιαχνε πάντα σπανακόπιτα για τις γιορτές.",
                    "Μετά τη βροχή, ο αέρας στο βουνό μύριζε θυμάρι και πεύκο.")),
            new Kind("tr", " ", List.of(
                    "İstanbul'a giden otobüs her sabah saat yedide terminalden kalkıyor.",
                    "Raporu cuma gününe kadar müdüre göndermemiz gerekiyor.",
                    "Sonbaharda parktaki ağaçların yaprakları sarıya ve kırmızıya dönüşüyor.",
                    "Bana en yakın eczanenin nerede olduğunu söyleyebilir misiniz?",
                    "Şirket gelecek yıl Ankara'da yeni bir ofis açmayı planlıyor.",
                    "Yağmurdan sonra köye giden yol neredeyse geçilmez hale geldi.")),
            new Kind("ar", " ", List.of(
                    "يغادر القطار المتجه إلى القاهرة من الرصيف الثالث بعد عشرين دقيقة.",
                    "يجب أن نرسل التقرير إلى المدير قبل نهاية هذا الأسبوع.",
                    "في فصل الربيع تمتلئ الحدائق بالأزهار الملونة والطيور.",
                    "هل يمكنك أن تخبرني أين تقع أقرب صيدلية من هنا؟",
                    "قررت الشركة افتتاح فرع جديد في مدينة الإسكندرية العام المقبل.",
                    "بعد المطر الغزير أصبح الطريق إلى القرية صعبا جدا.")),
            new Kind("he", " ", List.of(
                    "הרכבת לתל אביב יוצאת מהרציף השני בעוד רבע שעה.",
                    "אנחנו צריכים לשלוח את הדוח למנהל עד סוף השבוע.",
                    "באביב הגנים מלאים בפרחים צבעוניים ובציפורים.",
                    "אתה יכול להגיד לי איפה נמצא בית המרקחת הקרוב?",
                    "החברה החליטה לפתוח סניף חדש בחיפה בשנה הבאה.",
                    "אחרי הגשם הכבד הדרך לכפר הייתה כמעט בלתי עבירה.")),
            new Kind("hi", " ", List.of(
                    "दिल्ली जाने वाली ट्रेन तीसरे प्लेटफार्म से बीस मिनट बाद रवाना होगी।",
                    "हमें इस सप्ताह के अंत तक प्रबंधक को रिपोर्ट भेजनी होगी।",
                    "बारिश के मौसम में गाँव के खेत हरे भरे हो जाते हैं।",
                    "क्या आप मुझे बता सकते हैं कि सबसे नज़दीकी दवा की दुकान कहाँ है?",
                    "कंपनी ने अगले साल मुंबई में नया कार्यालय खोलने का फैसला किया है।",
                    "दादी हमेशा त्योहारों पर स्वादिष्ट मिठाइयाँ बनाती थीं।")),
            new Kind("zh", "", List.of(
                    "开往上海的火车将在二十分钟后从三号站台出发。",
                    "我们必须在本周末之前把报告交给经理。",
                    "春天的时候，公园里开满了各种颜色的花。",
                    "请问最近的药店在哪里？",
                    "公司决定明年在深圳开设一个新的办事处。",
                    "下了一整夜的大雨以后，通往村子的路几乎无法通行。",
                    "奶奶每逢过节都会包很多饺子给全家人吃。")),
            new Kind("ja", "", List.of(
                    "東京行きの電車は二十分後に三番線から出発します。",
                    "今週末までに部長に報告書を提出しなければなりません。",
                    "春になると、公園は色とりどりの花でいっぱいになります。",
                    "一番近い薬局はどこにあるか教えていただけますか。",
                    "会社は来年、大阪に新しい事務所を開くことにしました。",
                    "大雨のあと、村へ続く道はほとんど通れなくなりました。",
                    "祖母はお祭りのたびにおいしいお餅を作ってくれました。")),
            new Kind("ko", " ", List.of(
                    "부산으로 가는 기차는 이십 분 후에 삼번 승강장에서 출발합니다.",
                    "우리는 이번 주말까지 부장님께 보고서를 제출해야 합니다.",
                    "봄이 되면 공원은 여러 가지 색깔의 꽃으로 가득합니다.",
                    "가장 가까운 약국이 어디에 있는지 알려 주시겠어요?",
                    "회사는 내년에 인천에 새 사무실을 열기로 결정했습니다.",
                    "큰비가 내린 뒤에 마을로 가는 길은 거의 지나갈 수 없게 되었습니다.")),
            new Kind("vi", " ", List.of(
                    "Chuyến tàu đi Hà Nội sẽ khởi hành từ sân ga số ba sau hai mươi phút nữa.",
                    "Chúng tôi phải gửi báo cáo cho giám đốc trước cuối tuần này.",
                    "Vào mùa xuân, công viên tràn ngập những bông hoa đủ màu sắc.",
                    "Bạn có thể cho tôi biết hiệu thuốc gần nhất ở đâu không?",
                    "Công ty quyết định mở một văn phòng mới ở Đà Nẵng vào năm sau.",
                    "Sau cơn mưa lớn, con đường vào làng gần như không thể đi được.")),
            new Kind("th", "", List.of(
                    "รถไฟไปเชียงใหม่จะออกจากชานชาลาที่สามในอีกยี่สิบนาที ",
                    "เราต้องส่งรายงานให้ผู้จัดการก่อนสิ้นสัปดาห์นี้ ",
                    "ในฤดูฝนทุ่งนารอบหมู่บ้านจะเขียวขจี ",
                    "คุณช่วยบอกได้ไหมว่าร้านขายยาที่ใกล้ที่สุดอยู่ที่ไหน ",
                    "บริษัทตัดสินใจเปิดสำนักงานใหม่ที่ภูเก็ตในปีหน้า ")),
            new Kind("code", "\n", List.of(
                    "    public Optional<Order> findOrder(long id) {",
                    "        if (id <= 0) {\n            throw new IllegalArgumentException(\"id must be positive: \" + id);\n        }",
                    "        try (PreparedStatement ps = connection.prepareStatement(\"SELECT * FROM orders WHERE id = ?\")) {",
                    "            ps.setLong(1, id);\n            ResultSet rs = ps.executeQuery();",
                    "        return rs.next() ? Optional.of(map(rs)) : Optional.empty();\n    }",
                    "    private static final Logger LOG = LoggerFactory.getLogger(OrderRepository.class);",
                    "    for (int i = 0; i < items.size(); i++) {\n        total += items.get(i).price() * items.get(i).quantity();\n    }",
                    "def parse_line(line: str) -> dict:\n    key, _, value = line.partition('=')\n    return {key.strip(): value.strip()}")),
            new Kind("json", ",\n", List.of(
                    "{\"id\": 18342, \"name\": \"Widget Pro\", \"price\": 19.99, \"tags\": [\"tools\", \"garden\"]}",
                    "{\"id\": 18343, \"customer\": {\"email\": \"anna.berg@example.com\", \"country\": \"SE\"}, \"total\": 245.5}",
                    "{\"event\": \"order.shipped\", \"timestamp\": \"2025-03-14T09:26:53Z\", \"carrier\": \"DHL\"}",
                    "{\"sensor\": \"t-17\", \"readings\": [21.4, 21.6, 21.9, 22.3], \"unit\": \"celsius\", \"ok\": true}",
                    "{\"user_id\": \"u_8f3a2c\", \"roles\": [\"admin\", \"billing\"], \"last_login\": null}")),
            new Kind("numbers", "\n", List.of(
                    "| 2024-01 | 18,204.55 | 3.2% | 1,204 |",
                    "| 2024-02 | 17,993.10 | -1.1% | 1,187 |",
                    "| 2024-03 | 21,450.00 | 19.2% | 1,402 |",
                    "Invoice 4471-2209-18, due 2025-06-30, amount 3 480.75 EUR, account DE89 3704 0044 0532 0130 00",
                    "Coordinates: 52.520008, 13.404954; elevation 34 m; population 3,677,472 (2022).")),
            new Kind("mixed", " ", List.of(
                    "Please translate 「会議は明日の午後三時に始まります」 into English for the client.",
                    "The Russian phrase «Добро пожаловать» means welcome, and it appears on the sign 🚉 at the station.",
                    "Summary: 销售额增长了百分之十二 (sales grew 12%), mainly in the Asia region.",
                    "Note für das Team: the deadline is 2025-04-01, bitte nicht vergessen! ✅")));

    /** The sentences of one kind and how they are joined. */
    record Kind(String name, String separator, List<String> sentences) {}

    private Corpus() {}

    /**
     * Texts of every kind at each size, {@code perSize} of each.
     *
     * @param sizes sizes in tokens, as {@code counter} counts each sentence
     * @param perSize texts per kind and size
     * @param counter counts a sentence's tokens, to reach each size
     * @param seed the draw's seed
     */
    static List<Text> texts(int[] sizes, int perSize, ToIntFunction<String> counter, long seed) {
        Random random = new Random(seed);
        List<Text> out = new ArrayList<>();
        for (Kind kind : KINDS) {
            for (int size : sizes) {
                for (int n = 0; n < perSize; n++) {
                    out.add(new Text(kind.name(), draw(kind, size, counter, random)));
                }
            }
        }
        return out;
    }

    /** One text of about {@code tokens} tokens: sentences drawn at random, in paragraphs of 3 to 6. */
    static String draw(Kind kind, int tokens, ToIntFunction<String> counter, Random random) {
        StringBuilder b = new StringBuilder();
        int inParagraph = 0;
        int paragraph = 3 + random.nextInt(4);
        int counted = 0;
        while (counted < tokens) {
            if (b.length() > 0) {
                if (inParagraph == paragraph) {
                    b.append("\n\n");
                    inParagraph = 0;
                    paragraph = 3 + random.nextInt(4);
                } else {
                    b.append(kind.separator());
                }
            }
            String sentence = kind.sentences().get(random.nextInt(kind.sentences().size()));
            b.append(sentence);
            counted += counter.applyAsInt(sentence);
            inParagraph++;
        }
        return b.toString();
    }
}
