"""Build toolsel's demo catalog (``toolsel/demo/catalog.json``) from the MetaTool data set.

Dev script, not part of the product. It reads ``tools.jsonl`` and ``queries.jsonl`` from a folder in the
shared bench format (MetaTool, MIT, see ``toolsel/demo/NOTICE.md``) and combines them with the
hand-curated table below (plugins, categories, tags, schemas, page mappings) into one JSON document:
``{"source": ..., "plugins": [PLUGIN_SYNC, ...]}``, one plugin sync payload per themed plugin plus
``toolsel-core`` with two pinned meta tools.

Conventions used by the output:
- page patterns: ``/x`` exact, ``/x*`` prefix, ``*/x`` suffix, ``*x*`` contains; higher priority wins;
- categories are listed parents first; at most two levels;
- example queries are MetaTool single-tool queries (``type == "single"``) labelled with that tool only,
  drawn with ``random.Random(f"{seed}:{tool}")`` from the text-sorted candidates, so the output is
  byte-identical for the same input and seed. They overlap the benchmark's queries: do not evaluate
  retrieval on a registry built from this catalog without excluding them.

Usage (from the repository root)::

    python scripts/build_demo_catalog.py PATH/TO/bench/metatool toolsel/demo/catalog.json
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "toolsel" / "demo" / "catalog.json"
SOURCE = (
    "Tool names, descriptions and example queries: MetaTool / ToolE (Huang et al., arXiv 2310.03128, "
    "https://github.com/HowieHwong/MetaTool at 35e81bb, MIT License, (c) 2023 Yue Huang; descriptions "
    "from the OpenAI plugin store). Plugins, categories, schemas, tags and page mappings: toolsel. "
    "See toolsel/demo/NOTICE.md."
)
PLUGIN_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
TAG_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
MAX_SUMMARY = 300
MAX_EXAMPLE_CHARS = 200


class C(NamedTuple):
    """Curated facts about one MetaTool tool."""

    category: str
    tags: str  # space-separated, 2-5 lowercase keywords
    when: str  # completes "Use when ..."
    params: str = ""  # space-separated keys of PARAMS, at most 2 (all optional)
    limits: str = ""  # short sentence or ""


class Cat(NamedTuple):
    """A category: parent (None for a root), description and a workflow hint for agents."""

    parent: str | None
    description: str
    hint: str


class Plugin(NamedTuple):
    """A themed plugin: its categories and its page mappings (pattern, category, priority)."""

    categories: dict[str, Cat]
    mappings: list[tuple[str, str, int]]
    tools: dict[str, C]


PARAMS: dict[str, dict[str, Any]] = {
    "url": {
        "type": "string",
        "format": "uri",
        "maxLength": 2048,
        "description": "Address of the web page, file or video the request is about.",
    },
    "location": {
        "type": "string",
        "maxLength": 200,
        "description": "Place the request is about: city, region, address or postcode.",
    },
    "date": {"type": "string", "format": "date", "description": "Day of interest, YYYY-MM-DD."},
    "language": {
        "type": "string",
        "maxLength": 40,
        "description": "Language to use, as a name or code, e.g. 'Spanish' or 'es'.",
    },
    "limit": {
        "type": "integer",
        "minimum": 1,
        "maximum": 25,
        "default": 5,
        "description": "Maximum number of results to return.",
    },
    "symbol": {
        "type": "string",
        "maxLength": 16,
        "description": "Ticker symbol of a stock, fund or coin, e.g. 'AAPL' or 'BTC'.",
    },
    "amount": {"type": "number", "minimum": 0, "description": "Amount of money the request is about."},
    "currency": {
        "type": "string",
        "pattern": "^[A-Z]{3}$",
        "description": "ISO 4217 code of the target currency, e.g. 'EUR'.",
    },
    "text": {"type": "string", "maxLength": 20000, "description": "The text to work on, verbatim."},
    "email": {"type": "string", "format": "email", "description": "Email address to check."},
    "difficulty": {
        "type": "string",
        "enum": ["easy", "medium", "hard"],
        "default": "medium",
        "description": "How hard the opponent or puzzle should be.",
    },
    "sign": {
        "type": "string",
        "description": "The user's zodiac sign, as stated by the user.",
        "enum": [
            "aries",
            "taurus",
            "gemini",
            "cancer",
            "leo",
            "virgo",
            "libra",
            "scorpio",
            "sagittarius",
            "capricorn",
            "aquarius",
            "pisces",
        ],
    },
}

# Display names for MetaTool's merged tools, which have no name_for_human.
DISPLAY_NAMES: dict[str, str] = {
    "BookTool": "Books",
    "CharityTool": "Charity Finder",
    "ChartTool": "Charts & Diagrams",
    "CompanyInfoTool": "Company Info",
    "CourseTool": "Courses",
    "DataRetrievalTool": "Personal Memory",
    "DietTool": "Diet & Nutrition",
    "Discount": "Discount Finder",
    "EarthquakeTool": "Earthquake Alerts",
    "ExchangeTool": "Currency Exchange",
    "FinanceTool": "Finance",
    "GameTool": "Games",
    "GiftTool": "Gift Ideas",
    "HousePurchasingTool": "House Purchasing",
    "HouseRentingTool": "House Renting",
    "JobTool": "Jobs",
    "LawTool": "Law Search",
    "local": "Local Places",
    "MapTool": "Maps",
    "MediaModifyTool": "Media Editor",
    "MediaTool": "Media Recommendations",
    "MemeTool": "Meme Maker",
    "MemoryTool": "Flashcards",
    "MusicTool": "Music",
    "NASATool": "NASA Media",
    "NewsTool": "News",
    "NotesTool": "Reminders & To-dos",
    "PDF&URLTool": "PDF & URL Reader",
    "PodcastTool": "Podcasts",
    "PolishTool": "Text Polisher",
    "ProductComparison": "Product Comparison",
    "ProductSearch": "Product Search",
    "RepoTool": "Repo Finder",
    "ResearchFinder": "Research Finder",
    "ResearchHelper": "Research Helper",
    "RestaurantBookingTool": "Restaurant Booking",
    "ResumeTool": "Resume Builder",
    "Review": "Review Analyzer",
    "SEOTool": "SEO Analytics",
    "ShoppingAssistant": "Shopping Assistant",
    "StrologyTool": "Astrology",
    "TripAdviceTool": "Trip Advice",
    "TripTool": "Trip Booking",
    "URLTool": "URL & Domains",
    "VideoSummarizeTool": "Video Summarizer",
    "WeatherTool": "Weather",
    "WebsiteTool": "Website Builder",
}

# function_summary where the first usable sentence of description_for_model is an instruction to the
# model rather than a description of the tool.
SUMMARY_OVERRIDES: dict[str, str] = {
    "airqualityforeast": "Gets the 2-day air quality forecast for a US zip code.",
    "Algorithma": "Runs an immersive text-based life simulator game.",
    "AppyPieAIAppBuilder": "Generates Android and iOS apps from a text description, without code.",
    "CarYardBard": "Writes car sales advertisements for Australian car dealerships.",
    "ChatOCR": "Extracts text from PDF documents and images given by URL, using OCR.",
    "clinq": "Manages a CLINQ account: call information, Do Not Disturb and call reminders.",
    "cloudflare_radar": "Retrieves Cloudflare Radar data on Internet traffic, outages and attacks.",
    "copywriter": "Reviews the sales copy of a live web page and suggests how to improve it.",
    "crafty_clues": "Plays Crafty Clues, a word-guessing game in which the AI gives clues under optional restrictions.",
    "CTCP": "Parses and analyses the eligibility criteria of a ClinicalTrials.gov study given its NCT id.",
    "DataRetrievalTool": "Stores and retrieves information about the user to give personalised answers.",
    "EmailByNylas": "Reads, searches, organises and sends email in the user's accounts with any provider.",
    "form": "Creates forms, surveys, quizzes or questionnaires on Yay! Forms and returns a link to them.",
    "fundsdbsearch": "Searches FundsDB for funding opportunities in the UK and India; queries are made in English.",
    "Glowing": "Schedules and sends daily SMS messages, written from a theme, to a mobile number.",
    "hackit_web_scanner": "Scans websites for potential security threats.",
    "IndoorPlants": "Answers questions about indoor plants and gardening: care, watering, light, soil, "
    "pests and propagation.",
    "internetSearch": "Searches the internet for up-to-date information on any topic, merging several search sources.",
    "JobTool": "Finds job opportunities worldwide and gives interview tips and resume advice.",
    "noteable": "Creates and runs notebooks with Python, SQL and Markdown cells on Noteable.",
    "smarttsicketsai": "Finds tickets for sports events, concerts, theatre and other live events.",
    "speak": "Explains how to say something in another language, what a foreign word or phrase means, "
    "and language or culture nuances.",
    "speechki_tts_plugin": "Converts text to speech and returns a download link, player page or embed.",
    "StrologyTool": "Provides astrology services.",
    "Sudoku": "Gives sudoku puzzles and checks the player's answers.",
    "SummarizeAnything_pr": "Loads YouTube videos, web pages and PDF links so their content can be summarised.",
    "TicTacToe": "Plays turn-based Tic Tac Toe on 3x3 to 6x6 boards, replying to each move with the AI's move.",
    "timemachine": "Returns the current time in many formats and timezones.",
    "TripAdviceTool": "A comprehensive travel assistant offering activities, accommodation and "
    "attraction recommendations.",
    "VideoSummarizeTool": "Generates summaries of YouTube videos from their links and answers "
    "questions about their content.",
    "word_sneak": "Plays Word Sneak: the AI hides 3 secret words in a conversation and the user guesses them.",
}

TRAVEL = Plugin(
    categories={
        "travel": Cat(
            None,
            "Trips, places, weather and getting around.",
            "Settle the place and dates first, then use weather, transport and booking "
            "tools for that same place and time.",
        ),
        "trips": Cat(
            "travel",
            "Accommodation, itineraries and attractions.",
            "Ask for destination, dates and budget up front, and search stays and "
            "activities for exactly those dates before proposing an itinerary.",
        ),
        "transport": Cat(
            "travel",
            "Maps, routes, parking, fuel, charging and aviation data.",
            "Check which region a transport tool covers before calling it; many serve a single country or city.",
        ),
        "weather": Cat(
            "travel",
            "Weather, air quality, surf and earthquake information.",
            "Pass a concrete place and day; forecasts more than a few days out are unreliable, so say so.",
        ),
        "dining-out": Cat(
            "travel",
            "Restaurants and local businesses.",
            "Find a place first, then confirm party size, date and time with the user before booking a table.",
        ),
    },
    mappings=[
        ("/travel", "travel", 100),
        ("/travel/trips*", "trips", 110),
        ("*/weather", "weather", 80),
        ("*restaurant*", "dining-out", 60),
    ],
    tools={
        "TripTool": C(
            "trips",
            "hotels accommodation booking travel",
            "the user wants to find or book hotels and accommodation for a trip",
            "location date",
        ),
        "TripAdviceTool": C(
            "trips",
            "itinerary attractions sightseeing travel",
            "the user wants destination ideas, attractions or an itinerary",
            "location",
        ),
        "themeparkhipster": C(
            "trips",
            "theme-parks wait-times queues",
            "the user asks how long the queues are at a theme park",
            "location",
        ),
        "MapTool": C(
            "transport",
            "maps directions navigation routes",
            "the user wants a map, a route or directions between places",
            "location",
        ),
        "korea_subway": C(
            "transport",
            "subway metro korea routes",
            "the user needs a subway route or travel time on Korea's metro",
            "",
            "Korean metro networks only.",
        ),
        "SuperchargeMyEV": C(
            "transport",
            "ev charging supercharger tesla",
            "a non-Tesla EV driver needs Tesla superchargers near a place",
            "location",
            "Only Tesla superchargers open to non-Tesla vehicles.",
        ),
        "hdbcarpark": C(
            "transport",
            "parking carpark singapore",
            "the user wants free lots at an HDB car park in Singapore",
            "location",
            "Singapore HDB car parks only.",
        ),
        "SASpeedCameras": C(
            "transport",
            "speed-cameras roadworks driving south-australia",
            "the user will drive in South Australia and asks about mobile speed cameras or roadworks",
            "location date",
            "South Australian roads only.",
        ),
        "AusPetrolPrices": C(
            "transport",
            "petrol fuel prices australia",
            "the user asks for petrol prices in an Australian state or city",
            "location",
            "Australia only; daily averages, not per station.",
        ),
        "C3_Glide": C(
            "transport",
            "aviation metar taf notam pilots",
            "a pilot needs METARs, TAFs or NOTAMs for flight planning",
            "location",
            "Aviation weather and notices only; it cannot book flights.",
        ),
        "WeatherTool": C(
            "weather",
            "weather forecast temperature",
            "the user asks about current weather or the forecast for a place",
            "location date",
        ),
        "airqualityforeast": C(
            "weather",
            "air-quality pollution forecast outdoors",
            "the user asks about air quality in the US for today or tomorrow",
            "location",
            "US zip codes only; 2-day forecast.",
        ),
        "AusSurfReport": C(
            "weather",
            "surf waves beach australia",
            "the user wants today's surf conditions at an Australian break",
            "location",
            "Australian surf breaks only; today's report.",
        ),
        "EarthquakeTool": C(
            "weather",
            "earthquakes seismic alerts",
            "the user asks about recent earthquakes or quake alerts",
            "location limit",
        ),
        "RestaurantBookingTool": C(
            "dining-out",
            "restaurants reservations booking",
            "the user wants to reserve a table at a restaurant",
            "location date",
        ),
        "local": C(
            "dining-out",
            "local restaurants shops services",
            "the user wants restaurants, shops or services near a place",
            "location limit",
        ),
    },
)

COMMERCE = Plugin(
    categories={
        "shopping": Cat(
            None,
            "Finding, comparing and buying products.",
            "Pin down what the user wants and their budget, search, then compare the "
            "short list before pointing to a purchase.",
        ),
        "products": Cat(
            "shopping",
            "Product search, comparison, reviews and carts.",
            "Search for candidates first, then compare or summarise reviews of the two or three best ones.",
        ),
        "deals-gifts": Cat(
            "shopping",
            "Coupons, discounts and gift ideas.",
            "Settle the item or recipient first, then look for discounts on the chosen item.",
        ),
        "style": Cat(
            "shopping",
            "Fashion, beauty and custom apparel.",
            "Ask about occasion, size and taste before suggesting items to buy.",
        ),
        "marketing": Cat(
            None,
            "SEO, advertising and sales intelligence.",
            "Start from the user's website or brand and keep every analysis about that same domain.",
        ),
        "seo": Cat(
            "marketing",
            "Keywords, rankings and site SEO audits.",
            "Research keywords first, then audit the page against those keywords.",
        ),
        "advertising": Cat(
            "marketing",
            "Ad copy, paid search, affiliate links and visuals.",
            "Analyse the landing page or competitors before drafting ad copy, and "
            "show drafts to the user before anything is published.",
        ),
        "sales-intel": Cat(
            "marketing",
            "Company, brand and prospect data.",
            "Identify the company by its domain before enriching it or reaching out.",
        ),
    },
    mappings=[
        ("/shop*", "shopping", 100),
        ("/shop/deals", "deals-gifts", 120),
        ("*/cart", "products", 110),
        ("/marketing*", "marketing", 100),
        ("*seo*", "seo", 90),
    ],
    tools={
        "ProductSearch": C(
            "products",
            "products shopping search recommendations",
            "the user wants products that match preferences or a budget",
            "limit",
        ),
        "ProductComparison": C(
            "products",
            "compare products specs",
            "the user is choosing between several products and wants them compared",
        ),
        "Review": C(
            "products",
            "reviews pros-cons products",
            "the user wants product reviews summarised into pros and cons",
            "url",
        ),
        "ShoppingAssistant": C(
            "products",
            "cart checkout qr-code shopping",
            "the user wants to manage a shopping cart or share it as a QR code",
        ),
        "copilot": C(
            "products",
            "cars dealers vehicles buying",
            "the user is shopping for a car and wants listings or model details",
            "location",
        ),
        "CranePumpsManuals": C(
            "products",
            "pumps manuals catalog",
            "the user needs the catalog or manual for a Crane pump model",
            "",
            "Crane Pumps products only; needs a model number.",
        ),
        "Discount": C(
            "deals-gifts",
            "coupons discounts deals savings",
            "the user wants coupon codes or discounts for a product or store",
        ),
        "GiftTool": C("deals-gifts", "gifts presents ideas", "the user needs gift ideas for someone", "amount limit"),
        "shimmer_daily": C(
            "deals-gifts",
            "fathers-day gifts deals",
            "the user wants Father's Day gift ideas or deals",
            "",
            "Father's Day gifts only.",
        ),
        "AbleStyle": C("style", "fashion outfits clothing", "the user asks what to wear or wants outfit suggestions"),
        "Bohita": C(
            "style",
            "apparel t-shirts custom print",
            "the user wants custom printed apparel designed from an image idea",
        ),
        "tira": C(
            "style",
            "beauty cosmetics skincare shopping",
            "the user wants to shop for beauty or cosmetics products",
            "",
            "Tira marketplace products only.",
        ),
        "Man_of_Many": C(
            "style", "menswear style culture news", "the user wants men's style, product or culture news and ideas"
        ),
        "bramework": C(
            "seo", "seo keywords serp rankings", "the user wants keyword volume, difficulty or SERP analysis"
        ),
        "keywordexplorer": C("seo", "keywords content seo", "the user wants related keywords to use in content"),
        "seoanalysis": C(
            "seo",
            "seo audit competitors website",
            "the user wants a website's SEO analysed or compared with competitors",
            "url",
        ),
        "SEOTool": C("seo", "seo analytics website", "the user asks for SEO analytics about a site or page", "url"),
        "ad4mat": C(
            "advertising",
            "affiliate tracking-links monetization",
            "the user wants trackable affiliate links to monetise outgoing traffic",
            "url",
        ),
        "competitorppcads": C(
            "advertising",
            "ppc competitors ads google-ads",
            "the user wants to see the paid search ads a competitor has run",
            "url",
        ),
        "Google_Ads_Shopping_Microsoft_Ads_pay_per_click": C(
            "advertising",
            "google-ads microsoft-ads ppc shopping-feed",
            "the user wants help with Google Ads, Shopping feeds or Microsoft Ads campaigns",
            "url",
        ),
        "RoboAd": C(
            "advertising",
            "ad-copy text-ads generative",
            "the user wants text ad ideas for a product or landing page",
            "url",
        ),
        "copywriter": C(
            "advertising",
            "copywriting sales-copy landing-page",
            "the user wants the sales copy of a live page improved",
            "url",
            "Needs a public http(s) URL.",
        ),
        "CarYardBard": C(
            "advertising",
            "car-ads dealership listings",
            "a car dealer wants a sales ad written for a vehicle",
            "",
            "Written for Australian car dealers.",
        ),
        "placid": C(
            "advertising",
            "marketing-visuals templates design",
            "the user wants marketing images, PDFs or videos generated from templates",
            "",
            "Needs templates set up in Placid.",
        ),
        "social_media_muse": C(
            "advertising",
            "social-media hashtags songs captions",
            "a creator wants songs, hashtags or post ideas for a picture",
            "url",
        ),
        "brandfetch": C(
            "sales-intel",
            "brands logos colors fonts",
            "the user wants a company's logo, colours, fonts or other brand assets",
            "url",
        ),
        "chatspot": C(
            "sales-intel",
            "company-research domains funding",
            "the user wants marketing or sales data about a company or domain",
            "url",
        ),
        "clearbit_integration": C(
            "sales-intel",
            "enrichment prospecting companies leads",
            "the user wants company enrichment or prospect data",
            "url",
        ),
        "KalendarAI": C(
            "sales-intel",
            "sales-outreach meetings leads",
            "the user wants AI sales agents to reach prospects and book meetings",
        ),
        "find_agency": C(
            "sales-intel",
            "agencies marketing design vendors",
            "the user is looking for a marketing, design or web agency",
            "location",
        ),
        "CompanyInfoTool": C(
            "sales-intel", "companies business information", "the user asks for facts about a company"
        ),
    },
)

KNOWLEDGE = Plugin(
    categories={
        "knowledge": Cat(
            None,
            "Web search, news, research and reference lookups.",
            "Prefer a specialised source over general web search, and cite the links the tools return.",
        ),
        "web-search": Cat(
            "knowledge",
            "General and meta web search.",
            "Search with short keyword queries, then open or summarise only the most relevant results.",
        ),
        "news": Cat(
            "knowledge",
            "News, trends, newsletters and social posts.",
            "Say which date range you searched; news tools return the latest items first.",
        ),
        "research": Cat(
            "knowledge",
            "Academic papers, clinical trials and statistics.",
            "Find sources first, then answer from them with citations; do not "
            "paraphrase a paper you have not retrieved.",
        ),
        "reference": Cat(
            "knowledge",
            "Laws, politics and religious texts.",
            "Quote the retrieved text and its source; these tools inform and do not give legal or religious rulings.",
        ),
        "space": Cat(
            "knowledge",
            "NASA media and live space data.",
            "Use the photo tools for images and the ISS locator for live positions.",
        ),
        "learning": Cat(
            None,
            "Courses, study aids and language learning.",
            "Ask about level and goal first, then suggest material and offer practice.",
        ),
        "education": Cat(
            "learning",
            "Courses, exam prep, flashcards and books.",
            "Find a course or material first, then offer flashcards or practice on it.",
        ),
        "languages": Cat(
            "learning",
            "Translation and language tutoring.",
            "Confirm the source and target language before translating.",
        ),
    },
    mappings=[
        ("/research*", "research", 100),
        ("/news", "news", 100),
        ("/learn*", "learning", 90),
    ],
    tools={
        "internetSearch": C(
            "web-search", "web search google browse", "the question needs fresh information from the web", "limit"
        ),
        "MixerBox_WebSearchG_web_search": C(
            "web-search", "web search summaries", "the user wants web search results summarised in the chat", "limit"
        ),
        "total_query_meta_search_engine": C(
            "web-search",
            "meta-search web search-engines",
            "a broad search across many search engines is needed",
            "limit",
        ),
        "metaphor_search_api": C(
            "web-search",
            "links recommendations neural-search",
            "the user wants high-quality links or articles on a topic",
            "limit",
        ),
        "jini": C(
            "web-search",
            "facts real-time news images",
            "the user needs a quick real-time fact, score, price or news item",
        ),
        "lsongai": C(
            "web-search",
            "news memes weather stories",
            "the user wants light AI content such as news, memes, weather or stories",
        ),
        "NewsTool": C(
            "news",
            "news headlines current-events",
            "the user wants the latest news on a topic or region",
            "location limit",
        ),
        "Now": C(
            "news",
            "trends google-trends twitter",
            "the user asks what is trending on Google or Twitter",
            "location",
            "Twitter trends and keyword search cover Japan only.",
        ),
        "Substack_IQ": C(
            "news",
            "substack newsletters articles",
            "the user wants to find, read or summarise Substack newsletters",
            "url",
        ),
        "socialsearch": C(
            "news",
            "twitter tweets social-media",
            "the user wants tweets, users or media about a keyword or handle",
            "limit",
        ),
        "ResearchFinder": C(
            "research", "papers academic scholarly search", "the user wants academic papers on a topic", "limit"
        ),
        "ResearchHelper": C(
            "research",
            "papers citations mind-maps academic",
            "the user needs help with papers beyond search, such as citations, mind maps or questions about them",
        ),
        "clinical_trial_radar": C(
            "research",
            "clinical-trials medical biomarkers",
            "the user asks about clinical trials, diseases or biomarkers",
            "location",
            "Information only; not medical advice.",
        ),
        "CTCP": C(
            "research",
            "clinical-trials eligibility criteria",
            "the user wants the eligibility criteria of a ClinicalTrials.gov study analysed",
            "",
            "Needs an NCT identifier.",
        ),
        "blockatlas": C(
            "research",
            "census demographics statistics",
            "the user asks for US Census data or statistics",
            "location",
            "US Census data only.",
        ),
        "LawTool": C(
            "reference",
            "law legislation legal",
            "the user wants to find relevant laws or legal provisions",
            "location",
            "Finds laws; it does not give legal advice.",
        ),
        "uk_politics": C(
            "reference",
            "uk politics parliament speeches",
            "the user asks about UK political documents, votes or candidates",
            "",
            "UK politics only.",
        ),
        "hadith": C("reference", "hadith islam religion", "the user wants hadith on a topic or situation"),
        "NASATool": C("space", "nasa space images astronomy", "the user wants NASA images or space media", "limit"),
        "stellarexplorer": C(
            "space",
            "mars-rover nasa space-photos",
            "the user wants Mars rover photos or NASA's picture of the day",
            "date",
        ),
        "locator": C(
            "space", "iss astronauts space-station", "the user asks where the ISS is or who is in space right now"
        ),
        "CourseTool": C("education", "courses online-learning", "the user is looking for an online course", "limit"),
        "search": C(
            "education",
            "design courses ui ux",
            "the user wants to learn design, such as UI or UX, through a course",
            "",
            "Design courses only.",
        ),
        "Talkface_IELTS_Prep": C(
            "education", "ielts speaking exam english", "the user is preparing for the IELTS speaking test"
        ),
        "ABCmouse": C(
            "education",
            "kids activities early-learning",
            "the user wants learning activities for a young child",
            "",
            "For children aged 2-8.",
        ),
        "MemoryTool": C(
            "education", "flashcards spaced-repetition study", "the user wants to make or review flashcards"
        ),
        "BookTool": C(
            "education",
            "books reading recommendations",
            "the user wants book recommendations or a children's picture book",
            "limit",
        ),
        "speak": C(
            "languages",
            "language-learning phrases pronunciation",
            "the user asks how to say something in another language",
            "language",
        ),
        "MixerBox_Translate_AI_language_tutor": C(
            "languages",
            "translation languages tutor",
            "the user wants text translated or to practise a foreign language",
            "language",
        ),
    },
)

FINANCE = Plugin(
    categories={
        "finance": Cat(
            None,
            "Markets, personal finance, property and funding.",
            "State the currency, date and source of every figure; these tools inform and "
            "do not give regulated financial advice.",
        ),
        "markets": Cat(
            "finance",
            "Stocks, crypto, portfolios and market research.",
            "Look up current prices before commenting on a holding or portfolio.",
        ),
        "personal-finance": Cat(
            "finance",
            "Currency conversion, loans and tax calculators.",
            "Confirm amounts, currencies and location before calculating, and show the inputs with the result.",
        ),
        "real-estate": Cat(
            "finance",
            "Buying and renting homes.",
            "Ask for area, budget and size first, then search listings that match.",
        ),
        "funding": Cat(
            "finance",
            "Grants, funders and charities.",
            "Clarify sector and country, then search funders before drafting anything.",
        ),
    },
    mappings=[
        ("*finance*", "finance", 80),
        ("/portfolio*", "markets", 100),
        ("*/reports", "finance", 50),
    ],
    tools={
        "FinanceTool": C(
            "markets",
            "stocks crypto markets options",
            "the user asks about stock, crypto or market prices and news",
            "symbol",
        ),
        "QuiverQuantitative": C(
            "markets",
            "congress-trading insider-trading lobbying",
            "the user asks about congressional trading, lobbying or insider trades",
            "symbol",
            "US data only.",
        ),
        "ph_ai_news_query": C(
            "markets",
            "uk-equities equity-research analysts",
            "the user wants research insights on the UK equities market",
            "",
            "UK equities only, from Peel Hunt research.",
        ),
        "portfoliopilot": C(
            "markets",
            "portfolio investing advice",
            "the user wants a portfolio assessed or information on securities",
            "symbol",
        ),
        "Magnetis": C(
            "markets",
            "wealth-management portfolio returns",
            "a Magnetis client asks about portfolio returns or allocation",
            "",
            "Magnetis portfolios only.",
        ),
        "ExchangeTool": C(
            "personal-finance",
            "currency exchange conversion",
            "the user wants an amount converted between currencies",
            "amount currency",
        ),
        "CreditYelp": C(
            "personal-finance",
            "loans credit-cards repayment calculator",
            "the user wants a loan or credit card repayment schedule",
            "amount",
        ),
        "Tax_Calculator": C(
            "personal-finance",
            "sales-tax calculator",
            "the user wants the sales tax for an amount at a US address",
            "amount location",
            "US sales tax only.",
        ),
        "HousePurchasingTool": C(
            "real-estate",
            "homes buying property",
            "the user wants to buy a house or asks about buying property",
            "location",
        ),
        "HouseRentingTool": C(
            "real-estate", "rentals apartments housing", "the user is looking for a place to rent", "location"
        ),
        "fundsdbsearch": C(
            "funding",
            "grants funding funders",
            "the user looks for grants or funding opportunities",
            "location",
            "UK and India funders only.",
        ),
        "CharityTool": C(
            "funding", "charities nonprofits donations", "the user wants information about a nonprofit or charity"
        ),
    },
)

MEDIA = Plugin(
    categories={
        "media": Cat(
            None,
            "Music, audio, video, images and entertainment.",
            "Ask for the link or file when a media tool needs one, and show returned media as links or images.",
        ),
        "music": Cat(
            "media",
            "Songs, playlists, notation and chords.",
            "Search for the music first, then offer playlists or chords for what was found.",
        ),
        "audio": Cat(
            "media",
            "Podcasts and text-to-speech.",
            "Find the episode first, then summarise it; for speech, confirm voice and language.",
        ),
        "video": Cat(
            "media",
            "Video summaries and video generation.",
            "Summarise from the video's link; for generation, agree on topic and length first.",
        ),
        "images": Cat(
            "media",
            "Image search, editing, description and generation.",
            "Search existing images before generating new ones.",
        ),
        "entertainment": Cat(
            "media",
            "Shows, tickets, recommendations and stories.",
            "Find what is on first, then check where to watch or buy tickets for the same date.",
        ),
    },
    mappings=[
        ("/media*", "media", 90),
        ("/music", "music", 100),
        ("*video*", "video", 80),
    ],
    tools={
        "MusicTool": C(
            "music", "music playlists songs trends", "the user wants songs, playlists or music trends", "limit"
        ),
        "abc_to_audio": C(
            "music", "abc-notation midi audio sheet-music", "the user has ABC notation and wants audio or sheet music"
        ),
        "uberchord": C("music", "guitar chords diagrams", "the user wants a guitar chord diagram"),
        "PodcastTool": C(
            "audio", "podcasts episodes summaries", "the user wants podcasts found or summarised", "limit"
        ),
        "speechki_tts_plugin": C(
            "audio", "text-to-speech voice audio", "the user wants text turned into spoken audio", "language"
        ),
        "VideoSummarizeTool": C(
            "video",
            "youtube summaries video",
            "the user wants a YouTube video summarised or questions answered about it",
            "url",
        ),
        "video_highlight": C(
            "video",
            "youtube highlights video",
            "the user wants to explore or get highlights from YouTube or their own videos",
            "url",
        ),
        "heygen": C(
            "video", "avatar-video spokesperson generation", "the user wants an AI avatar video made from a script"
        ),
        "Visla": C(
            "video",
            "stock-footage short-video generation",
            "the user wants a short video made from stock footage on a topic",
        ),
        "ImageSearch": C(
            "images", "stock-photos unsplash images", "the user wants free images to illustrate content", "limit"
        ),
        "GifApi": C("images", "gifs giphy reactions", "the user wants a GIF", "limit"),
        "MediaModifyTool": C(
            "images",
            "photo-editing filters video-editing",
            "the user wants a photo or video edited, such as filters or cropping",
            "url",
        ),
        "SceneXplain": C(
            "images", "image-description captioning vision", "the user wants an image described or explained", "url"
        ),
        "photorealistic": C(
            "images", "midjourney prompts image-generation", "the user wants a photorealistic prompt for Midjourney"
        ),
        "MemeTool": C("images", "memes humor images", "the user wants a meme made"),
        "ArtCollection": C(
            "images", "art museum paintings", "the user wants artworks from the Metropolitan Museum of Art", "limit"
        ),
        "assetOvi": C("images", "3d-assets models games", "the user wants 3D models or assets", "limit"),
        "WordCloud": C("images", "word-cloud visualization text", "the user wants a word cloud made from text", "text"),
        "MediaTool": C(
            "entertainment", "movies tv recommendations", "the user wants movie, TV, book or podcast recommendations"
        ),
        "what_to_watch": C(
            "entertainment", "tv streaming where-to-watch", "the user asks what to watch or where a show is streaming"
        ),
        "Broadway": C(
            "entertainment",
            "broadway theater shows",
            "the user wants shows playing on Broadway",
            "",
            "Broadway in New York City only.",
        ),
        "smarttsicketsai": C(
            "entertainment",
            "tickets concerts sports events",
            "the user wants tickets for a concert, game or show",
            "location date",
        ),
        "storybird_stories": C(
            "entertainment", "stories illustrated kids", "the user wants an illustrated story written from a prompt"
        ),
    },
)

PRODUCTIVITY = Plugin(
    categories={
        "productivity": Cat(
            None,
            "Notes, documents, communication, writing and careers.",
            "Confirm before anything is sent, created or deleted on the user's behalf.",
        ),
        "notes-tasks": Cat(
            "productivity",
            "Reminders, to-dos, notes and workspaces.",
            "List existing items before adding new ones so nothing is duplicated.",
        ),
        "documents": Cat(
            "productivity",
            "PDFs, OCR, exports, forms and charts.",
            "Get the text out of a file or link first, then summarise, count or chart it.",
        ),
        "utilities": Cat(
            "productivity",
            "Calculator, QR codes, time and text utilities.",
            "Use these for exact answers (maths, time, codes) instead of estimating.",
        ),
        "communication": Cat(
            "productivity",
            "Email, calls, SMS, meetings and app automation.",
            "Read before writing: check the thread or call, then draft, and send only after the user approves.",
        ),
        "writing": Cat(
            "productivity",
            "Rewriting and hiring writers.",
            "Keep the user's meaning and tone; show changes rather than silently replacing text.",
        ),
        "assistants": Cat(
            "productivity",
            "Multi-agent helpers, prompt tuning and coaching.",
            "Use these when a task needs other perspectives or a sharper prompt, not for facts.",
        ),
        "careers": Cat(
            "productivity",
            "Jobs, resumes, outreach and hiring.",
            "Search jobs first, then tailor the resume and outreach to the chosen posting.",
        ),
    },
    mappings=[
        ("/inbox", "communication", 100),
        ("/docs*", "documents", 90),
        ("*/tasks", "notes-tasks", 90),
        ("/careers*", "careers", 100),
    ],
    tools={
        "NotesTool": C(
            "notes-tasks", "reminders todo tasks", "the user wants to add, list or complete reminders or to-dos", "date"
        ),
        "reflect_notes": C("notes-tasks", "notes reflect journal", "the user wants something saved as a Reflect note"),
        "dart": C(
            "notes-tasks", "project-management tasks team", "the user wants project tasks created or listed in Dart"
        ),
        "chat_with_workspace": C(
            "notes-tasks", "notion workspace docs", "the user asks about content in their Notion workspace"
        ),
        "DataRetrievalTool": C(
            "notes-tasks",
            "memory personal-info recall",
            "the user wants the assistant to remember or recall personal information",
        ),
        "PDF&URLTool": C(
            "documents",
            "pdf documents chat summaries",
            "the user wants to ask about or summarise a PDF or web document",
            "url",
        ),
        "ChatOCR": C(
            "documents", "ocr scans text-extraction", "the user wants text pulled out of a scan, photo or PDF", "url"
        ),
        "PDF_Exporter": C("documents", "pdf export chat", "the user wants a chat answer exported as a PDF"),
        "exportchat": C("documents", "export conversation", "the user wants all or part of the conversation exported"),
        "SummarizeAnything_pr": C(
            "documents", "summarize youtube webpages pdf", "the user gives a link and wants it summarised", "url"
        ),
        "word_counter": C(
            "documents",
            "word-count characters text",
            "the user wants the words or characters in a text counted",
            "text",
        ),
        "form": C("documents", "forms surveys quizzes", "the user wants a form, survey or quiz created"),
        "LarkBaseImporter": C(
            "documents", "lark spreadsheets import data", "the user wants tabular data imported into Lark Base"
        ),
        "ChartTool": C(
            "documents", "charts diagrams graphs visualization", "the user wants a chart or diagram drawn from data"
        ),
        "calculator": C("utilities", "math calculator arithmetic", "the user needs a formula evaluated exactly"),
        "create_qr_code": C("utilities", "qr-code links", "the user wants a QR code for a text or URL"),
        "qreator": C("utilities", "qr-code generator", "the user wants a QR code generated"),
        "timemachine": C(
            "utilities", "time timezones clock", "the user asks for the current time or date somewhere", "location"
        ),
        "Figlet": C("utilities", "ascii-art text fonts", "the user wants text rendered as ASCII art", "text"),
        "universal": C(
            "utilities",
            "webpages pdf qr-code",
            "the user needs a mixed web task such as reading a page or a PDF, or making a QR code",
            "url",
        ),
        "EmailByNylas": C("communication", "email inbox mail", "the user wants to read, search or send email"),
        "clinq": C(
            "communication",
            "calls telephony reminders",
            "the user wants CLINQ call details, call reminders or Do Not Disturb changed",
        ),
        "Glowing": C(
            "communication", "sms reminders scheduling", "the user wants daily SMS messages scheduled to a phone number"
        ),
        "Zapier": C(
            "communication",
            "automation integrations workflows",
            "the user wants an action run in another app such as Gmail, Sheets or a CRM",
        ),
        "buildbetter": C(
            "communication",
            "meetings call-transcripts recordings",
            "the user asks what was said in recorded company calls",
        ),
        "PolishTool": C(
            "writing", "rewriting paraphrase polish", "the user wants text rewritten to sound more natural", "text"
        ),
        "MyWritingCompanion": C(
            "writing", "writers freelance content", "the user wants to hire or manage human writers"
        ),
        "aiAgents": C(
            "assistants",
            "multi-agent collaboration goals",
            "a goal is best split across several collaborating AI agents",
        ),
        "ai_council": C(
            "assistants",
            "perspectives evaluation advice",
            "the user wants a question weighed from several perspectives",
        ),
        "rephrase": C(
            "assistants", "prompts rewriting clarity", "the user wants a prompt made clearer and more specific"
        ),
        "kraftful": C(
            "assistants",
            "product-management best-practices coaching",
            "the user asks for product development best practices or product docs",
        ),
        "JobTool": C(
            "careers", "jobs interviews career", "the user is looking for jobs or interview advice", "location"
        ),
        "ResumeTool": C("careers", "resume cv feedback", "the user wants a resume created or reviewed"),
        "dover_outreach": C(
            "careers", "outreach email jobs networking", "the user wants a personalised outreach email about a job"
        ),
        "TalentOrg": C(
            "careers", "hiring freelancers engineers", "the user wants to find and hire freelance engineers"
        ),
    },
)

DEV_TOOLS = Plugin(
    categories={
        "development": Cat(
            None,
            "Code, infrastructure, websites and security.",
            "Prefer read-only checks first; confirm before running commands or deploying anything.",
        ),
        "coding": Cat(
            "development",
            "Code search, SQL, notebooks, webhooks and app builders.",
            "Find existing code or examples before generating new code.",
        ),
        "infrastructure": Cat(
            "development",
            "Servers, deployments and Internet health.",
            "Inspect state (logs, metrics, status) before changing anything, and show commands before running them.",
        ),
        "web": Cat(
            "development",
            "Domains, scraping, site builders and web performance.",
            "Fetch or measure the page first, then act on what was returned.",
        ),
        "security": Cat(
            "development", "Web scanning and breach checks.", "Only scan sites and accounts the user owns or may test."
        ),
    },
    mappings=[
        ("/dev*", "development", 100),
        ("*/deployments", "infrastructure", 110),
        ("/settings/security", "security", 100),
    ],
    tools={
        "RepoTool": C(
            "coding",
            "github repositories code-snippets",
            "the user wants GitHub projects or code snippets for a task",
            "limit",
        ),
        "AI2sql": C("coding", "sql text-to-sql database", "the user wants a natural-language request turned into SQL"),
        "Creaticode_Extension_of_MIT_Scratch": C(
            "coding", "scratch kids-coding visual", "the user wants a Scratch program written or shown"
        ),
        "dev": C(
            "coding", "dev-community articles developers", "the user wants DEV Community posts or authors", "limit"
        ),
        "webhooks": C(
            "coding", "webhooks javascript http", "the user wants an HTTP webhook written, deployed or managed"
        ),
        "noteable": C(
            "coding", "notebooks python data-analysis", "the user wants a Python or SQL notebook created or run"
        ),
        "AppyPieAIAppBuilder": C(
            "coding", "no-code app-builder mobile", "the user wants a mobile app generated from a description"
        ),
        "tailor_erp": C("coding", "erp business-apps generator", "the user wants a custom ERP application designed"),
        "AutoInfra1": C(
            "infrastructure",
            "servers devops monitoring cloud",
            "the user wants to inspect or automate tasks on their cloud servers",
        ),
        "SSH": C(
            "infrastructure",
            "ssh servers shell",
            "the user wants commands run on a server over SSH",
            "",
            "Needs SSH access to the user's server.",
        ),
        "deployscript": C(
            "infrastructure", "deploy web-apps hosting", "the user wants a small web app generated and launched"
        ),
        "cloudflare_radar": C(
            "infrastructure",
            "internet-traffic outages cloudflare",
            "the user asks about Internet outages, traffic trends or attacks",
            "location",
        ),
        "URLTool": C(
            "web",
            "domains urls registration",
            "the user asks about a domain or URL, or wants to register a domain",
            "url",
        ),
        "WebsiteTool": C(
            "web", "website-builder publishing", "the user wants a website created or content published on one"
        ),
        "web_scraper": C(
            "web", "scraping webpages extraction", "the user wants the content of a web page extracted", "url"
        ),
        "web_requests": C(
            "web", "http fetch urls", "the user wants content fetched from a URL or HTTP endpoint", "url"
        ),
        "WebRewind": C(
            "web",
            "web-archive snapshots history",
            "the user wants to see how a website looked on a past date",
            "url date",
        ),
        "website_performance_insights": C(
            "web",
            "lighthouse performance accessibility",
            "the user wants a site's speed, accessibility or SEO measured",
            "url",
        ),
        "wpinteract": C(
            "web", "wordpress posts blogs", "the user wants posts fetched or searched on a WordPress site", "url limit"
        ),
        "hackit_web_scanner": C(
            "security",
            "security scanner vulnerabilities",
            "the user wants a website scanned for security issues",
            "url",
        ),
        "hacktrack": C(
            "security",
            "data-breaches passwords email",
            "the user wants to know whether an email address appears in a data breach",
            "email",
        ),
    },
)

LIFESTYLE = Plugin(
    categories={
        "games": Cat(
            None,
            "Games to play in chat and game information.",
            "Explain the rules briefly, keep the game state from the tool's replies, and "
            "let the user move first unless asked otherwise.",
        ),
        "tabletop-games": Cat(
            "games",
            "Board, card and dice games.",
            "Send each move exactly as the tool expects and show the board after every move.",
        ),
        "video-games": Cat(
            "games", "Video game information and text adventures.", "Say which game and platform an answer is about."
        ),
        "word-games": Cat("games", "Word guessing games and crosswords.", "Keep secrets hidden until the round ends."),
        "lifestyle": Cat(
            None,
            "Sports, health, food, home and personal growth.",
            "Personalise with what the user tells you and do not guess personal details.",
        ),
        "sports": Cat(
            "lifestyle",
            "Scores, fixtures, teams and fantasy football.",
            "Name the league and season; check live results before predictions.",
        ),
        "health": Cat(
            "lifestyle",
            "Fitness, diet and local health risks.",
            "Give general guidance only and suggest a professional for medical questions.",
        ),
        "personal-growth": Cat(
            "lifestyle",
            "Habits, decisions and personality.",
            "Log what the user decides or does, then review it with them later.",
        ),
        "astrology": Cat(
            "lifestyle",
            "Horoscopes, tarot and astrology.",
            "Ask for the sign or birth date rather than guessing, and present results as entertainment.",
        ),
        "food-drink": Cat(
            "lifestyle", "Recipes, meal plans and drinks.", "Check dietary needs before suggesting recipes."
        ),
        "home": Cat(
            "lifestyle", "Houseplants and pets.", "Ask about the plant or animal and the user's location first."
        ),
    },
    mappings=[
        ("/games*", "games", 100),
        ("*sport*", "sports", 80),
        ("/wellness*", "health", 100),
    ],
    tools={
        "GameTool": C(
            "video-games", "games recommendations gaming", "the user wants game information or recommendations", "limit"
        ),
        "champdex": C(
            "video-games",
            "league-of-legends champions roleplay",
            "the user wants to chat with a League of Legends champion",
        ),
        "ApexMap": C(
            "video-games", "apex-legends map-rotation", "the user asks which Apex Legends ranked map is live or next"
        ),
        "Algorithma": C(
            "video-games", "life-simulator text-game", "the user wants to play a life simulation text game"
        ),
        "timeport": C("video-games", "history time-travel game", "the user wants an interactive history game"),
        "Chess": C("tabletop-games", "chess board-game", "the user wants to play chess", "difficulty"),
        "Checkers": C("tabletop-games", "checkers draughts board-game", "the user wants to play checkers"),
        "Sudoku": C("tabletop-games", "sudoku puzzle", "the user wants to play or check a sudoku", "difficulty"),
        "TicTacToe": C("tabletop-games", "tic-tac-toe game", "the user wants to play tic tac toe"),
        "CribbageScorer": C("tabletop-games", "cribbage scoring cards", "the user wants a cribbage hand scored"),
        "diceroller": C("tabletop-games", "dice d20 rpg", "the user wants dice rolled for a tabletop game"),
        "magi_codex": C(
            "tabletop-games",
            "mtg magic-the-gathering cards rules",
            "the user asks about Magic: The Gathering cards or rules",
        ),
        "crafty_clues": C("word-games", "word-guessing party-game", "the user wants to play a word-guessing game"),
        "word_sneak": C("word-games", "word-game conversation", "the user wants to play Word Sneak"),
        "Puzzle_Constructor": C(
            "word-games", "crossword puzzle-maker", "the user wants a crossword built from words and hints"
        ),
        "Agones": C("sports", "soccer football results", "the user asks for soccer match results or fixtures", "date"),
        "keyplays_football": C(
            "sports", "soccer live-scores standings", "the user wants live soccer scores, standings or match details"
        ),
        "ndricks_sports_api": C(
            "sports",
            "nba nfl nhl mlb",
            "the user asks about a US pro team or its latest news",
            "",
            "NHL, NBA, NFL and MLB teams only.",
        ),
        "talkfpl": C(
            "sports", "fantasy-premier-league fpl", "the user wants help managing a Fantasy Premier League team"
        ),
        "Planfit": C("health", "workouts fitness exercise", "the user wants a workout plan or exercise instructions"),
        "DietTool": C(
            "health", "calories diet nutrition", "the user wants to count calories, track diet or find healthy meals"
        ),
        "hubbubworld_hubbub_1": C(
            "health",
            "covid flu health-risk",
            "the user asks about local COVID-19, flu or RSV risk",
            "location",
            "US locations only.",
        ),
        "mini_habits": C(
            "personal-growth", "habits tracking routines", "the user wants to build or track a small daily habit"
        ),
        "decision_journal": C(
            "personal-growth",
            "decisions journal reflection",
            "the user is making a decision or wants to review past decisions",
        ),
        "mbti": C("personal-growth", "mbti personality test", "the user wants to take an MBTI personality test"),
        "Horoscopes_by_Inner_Self": C(
            "astrology",
            "horoscope zodiac",
            "the user wants a daily, weekly or monthly horoscope",
            "sign",
            "Needs the user's sign; entertainment only.",
        ),
        "Dr_Thoths_Tarot": C(
            "astrology", "tarot readings cards", "the user wants a tarot reading", "", "For entertainment only."
        ),
        "StrologyTool": C(
            "astrology", "astrology birth-chart", "the user asks for an astrology reading or birth chart"
        ),
        "recipe_retrieval": C(
            "food-drink", "recipes cooking meal-plans", "the user wants recipes, meal plans or cooking tips"
        ),
        "sakenowa": C(
            "food-drink",
            "sake japanese drinks",
            "the user wants to find or learn about a sake brand",
            "",
            "Sake brands only.",
        ),
        "IndoorPlants": C("home", "houseplants gardening plant-care", "the user asks about caring for indoor plants"),
        "haulingbuddies": C(
            "home",
            "pets animal-transport",
            "the user needs a reliable animal transporter",
            "location",
            "Mainly US transporters (USDA and FMCSA records).",
        ),
    },
)

PLUGINS: dict[str, Plugin] = {
    "commerce": COMMERCE,
    "dev-tools": DEV_TOOLS,
    "finance": FINANCE,
    "knowledge": KNOWLEDGE,
    "lifestyle": LIFESTYLE,
    "media": MEDIA,
    "productivity": PRODUCTIVITY,
    "travel-suite": TRAVEL,
}

CORE_PLUGIN: dict[str, Any] = {
    "schema_version": 1,
    "plugin_id": "toolsel-core",
    "plugin_version": "1.0.0",
    "tools": [
        {
            "name": "report_issue",
            "display_name": "Report a tool issue",
            "description": "Report a tool that failed, misbehaved or does not do what it says.",
            "function_summary": "Records a problem with a named tool so it can be reviewed and, if it "
            "keeps failing, demoted or quarantined.",
            "parameters": {
                "type": "object",
                "properties": {
                    "tool": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 128,
                        "description": "Exact name of the tool that misbehaved.",
                    },
                    "description": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 2000,
                        "description": "What went wrong: the call, the error or the wrong result.",
                    },
                },
                "required": ["tool", "description"],
                "additionalProperties": False,
            },
            "tags": ["feedback", "errors", "tools", "meta"],
            "when_to_use": "Use when a tool call failed, returned wrong or unrelated results, or a "
            "tool does not match its description.",
            "limitations": "It does not retry or fix the failed call.",
            "example_queries": [
                "The weather tool keeps returning an error, report it",
                "That tool gave me results for the wrong city",
            ],
            "category": "meta",
            "pinned": True,
            "pin_weight": 50,
            "schema_version": "1.0.0",
        },
        {
            "name": "search_tools",
            "display_name": "Search tools",
            "description": "Find more tools by describing what you need.",
            "function_summary": "Searches the whole tool catalog for tools matching a described "
            "need and returns their names, descriptions and schemas.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 500,
                        "description": "The capability you need, in plain words, e.g. 'convert currencies'.",
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 20,
                        "default": 5,
                        "description": "Maximum number of tools to return.",
                    },
                },
                "required": ["query"],
                "additionalProperties": False,
            },
            "tags": ["discovery", "search", "tools", "meta"],
            "when_to_use": "Use when none of the tools you were given fits the task.",
            "limitations": "It only finds tools; call the tool it returns in a later step.",
            "example_queries": [
                "Is there a tool that can turn ABC notation into a MIDI file?",
                "Find me a tool for checking US sales tax",
            ],
            "category": "meta",
            "pinned": True,
            "pin_weight": 100,
            "schema_version": "1.0.0",
        },
    ],
    "categories": [
        {
            "name": "meta",
            "parent": None,
            "description": "Tools about the tool catalog itself.",
            "workflow_hint": "Call search_tools when the listed tools do not cover the task, and "
            "report_issue when a tool fails or misbehaves, then continue with the "
            "best remaining tool.",
        },
    ],
    "page_mappings": [],
}

_INSTRUCTION = re.compile(
    r"\b(must|you are|assistant (?:will|should|must)|always|never|endpoint|instructions?:)",
    re.IGNORECASE,
)

_ASSISTANT_TURN = re.compile(
    r"^(certainly|sure|of course|our (plugin|tool))\b|(would|do) you (would )?like me to",
    re.IGNORECASE,
)


def clean(text: str) -> str:
    """Collapse whitespace."""
    return " ".join(text.split())


def trim(text: str, limit: int) -> str:
    """Cut ``text`` to at most ``limit`` characters at a word boundary."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:-")
    return cut + "…"


def function_summary(tool: dict[str, Any]) -> str:
    """One descriptive sentence from description_for_model (or description), <= 300 chars."""
    name = tool["name"]
    if name in SUMMARY_OVERRIDES:
        return SUMMARY_OVERRIDES[name]
    text = clean(tool.get("description_for_model") or "")
    text = re.sub(r"^#.*?\d{6,}\s*", "", text)  # a "# Prompt 20230322" header
    for candidate in (text, clean(tool["description"])):
        for sentence in re.split(r"(?<=[.!])\s+(?=[A-Z])", candidate):
            if len(sentence) >= 12 and not sentence.endswith("?") and not _INSTRUCTION.search(sentence):
                sentence = sentence if sentence[-1] in ".!" else sentence + "."
                return trim(sentence, MAX_SUMMARY)
    raise ValueError(f"no usable summary sentence for {name}; add a SUMMARY_OVERRIDES entry")


def usable_example(query: str) -> bool:
    """Short enough and not an assistant turn that slipped into the data set."""
    return len(query) <= MAX_EXAMPLE_CHARS and not _ASSISTANT_TURN.search(query)


def pick_examples(candidates: list[str], tool: str, seed: int, count: int) -> list[str]:
    """Deterministic sample of ``count`` queries, drawn from the usable ones when there are enough."""
    pool = sorted(q for q in candidates if usable_example(q))
    if len(pool) < count:
        pool = sorted(candidates)
    rng = random.Random(f"{seed}:{tool}")
    return rng.sample(pool, min(count, len(pool)))


def schema(display: str, cur: C, example: str) -> dict[str, Any]:
    """JSON Schema for a tool: a required plain-language ``query`` plus the curated optional params."""
    props: dict[str, Any] = {
        "query": {
            "type": "string",
            "minLength": 1,
            "maxLength": 1000,
            "description": f'Plain-language request for {display}, e.g. "{example}"',
        },
    }
    for key in cur.params.split():
        props[key] = dict(PARAMS[key])
    return {"type": "object", "properties": props, "required": ["query"], "additionalProperties": False}


def build_tool(src: dict[str, Any], cur: C, queries: list[str], seed: int, count: int) -> dict[str, Any]:
    """One TOOL entry from a MetaTool record and its curation."""
    name = src["name"]
    display = clean(src.get("name_for_human") or "") or DISPLAY_NAMES[name]
    examples = pick_examples(queries, name, seed, count)
    return {
        "name": name,
        "display_name": display,
        "description": clean(src["description"]),
        "function_summary": function_summary(src),
        "parameters": schema(display, cur, min(examples, key=len)),
        "tags": cur.tags.split(),
        "when_to_use": f"Use when {cur.when}.",
        "limitations": cur.limits,
        "example_queries": examples,
        "category": cur.category,
        "pinned": False,
        "pin_weight": 0,
        "schema_version": "1.0.0",
    }


def ordered_categories(cats: dict[str, Cat]) -> list[dict[str, Any]]:
    """Categories as dicts, roots first, each group sorted by name."""
    rows = sorted(cats.items(), key=lambda kv: (kv[1].parent is not None, kv[0]))
    return [{"name": n, "parent": c.parent, "description": c.description, "workflow_hint": c.hint} for n, c in rows]


def build_catalog(src_dir: Path, seed: int, count: int) -> dict[str, Any]:
    """The whole catalog document."""
    tools = {t["name"]: t for t in map(json.loads, (src_dir / "tools.jsonl").read_text().splitlines())}
    singles: dict[str, list[str]] = {}
    for line in (src_dir / "queries.jsonl").read_text().splitlines():
        q = json.loads(line)
        if q.get("type") == "single" and len(q["relevant"]) == 1:
            singles.setdefault(q["relevant"][0], []).append(clean(q["query"]))
    curated = {n: c for p in PLUGINS.values() for n, c in p.tools.items()}
    if sum(len(p.tools) for p in PLUGINS.values()) != len(curated):
        raise ValueError("a tool is curated in more than one plugin")
    if set(curated) != set(tools):
        raise ValueError(
            f"curation mismatch: missing {sorted(set(tools) - set(curated))}, "
            f"unknown {sorted(set(curated) - set(tools))}"
        )
    plugins = []
    for pid, plugin in sorted(PLUGINS.items()):
        plugins.append(
            {
                "schema_version": 1,
                "plugin_id": pid,
                "plugin_version": "1.0.0",
                "tools": [
                    build_tool(tools[n], plugin.tools[n], singles.get(n, []), seed, count)
                    for n in sorted(plugin.tools, key=str.casefold)
                ],
                "categories": ordered_categories(plugin.categories),
                "page_mappings": [
                    {"page_pattern": pat, "category": cat, "priority": pri} for pat, cat, pri in sorted(plugin.mappings)
                ],
            }
        )
    plugins.append(CORE_PLUGIN)
    return {"source": SOURCE, "plugins": plugins}


def render(value: Any, indent: int = 0) -> str:
    """JSON text, one-space indent; flat lists and objects that fit in 100 characters stay inline."""
    flat = json.dumps(value, ensure_ascii=False)
    if not isinstance(value, (dict, list)):
        return flat
    children = value.values() if isinstance(value, dict) else value
    if not value or (len(flat) <= 100 and not any(isinstance(c, (dict, list)) for c in children)):
        return flat
    pad = " " * (indent + 1)
    if isinstance(value, dict):
        rows = [f"{pad}{json.dumps(k, ensure_ascii=False)}: {render(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(rows) + "\n" + " " * indent + "}"
    rows = [pad + render(v, indent + 1) for v in value]
    return "[\n" + ",\n".join(rows) + "\n" + " " * indent + "]"


def match_mode(pattern: str) -> str:
    """exact, prefix (``/a*``), suffix (``*/a``) or contains (``*a*``)."""
    inner = pattern.strip("*")
    if not inner or "*" in inner:
        raise ValueError(f"bad page pattern {pattern!r}")
    starts, ends = pattern.startswith("*"), pattern.endswith("*")
    return "contains" if starts and ends else "suffix" if starts else "prefix" if ends else "exact"


def validate(catalog: dict[str, Any], min_examples: int) -> Counter[str]:
    """Check the catalog's invariants; return counts. Raises ValueError on the first problem."""
    counts: Counter[str] = Counter()
    names: set[str] = set()
    cat_names: set[str] = set()
    modes: set[str] = set()

    def need(ok: bool, msg: str) -> None:
        if not ok:
            raise ValueError(msg)

    for plugin in catalog["plugins"]:
        pid = plugin["plugin_id"]
        need(bool(PLUGIN_ID_RE.match(pid)), f"bad plugin_id {pid}")
        cats = {c["name"]: c for c in plugin["categories"]}
        need(len(cats) == len(plugin["categories"]), f"{pid}: duplicate category")
        need(not cats.keys() & cat_names, f"{pid}: category name reused across plugins")
        cat_names |= cats.keys()
        seen: set[str] = set()
        for c in plugin["categories"]:
            parent = c["parent"]
            need(
                parent is None or (parent in seen and cats[parent]["parent"] is None),
                f"{pid}: category {c['name']} needs a root parent listed before it",
            )
            need(bool(c["description"]) and bool(c["workflow_hint"]), f"{pid}: {c['name']} text")
            seen.add(c["name"])
        for t in plugin["tools"]:
            n = t["name"]
            need(0 < len(n) <= 128 and n not in names, f"duplicate or bad tool name {n}")
            names.add(n)
            need(t["category"] in cats, f"{n}: category {t['category']} not in {pid}")
            need(len(t["function_summary"]) <= MAX_SUMMARY, f"{n}: summary too long")
            need(2 <= len(t["tags"]) <= 5 and all(TAG_RE.match(g) for g in t["tags"]), f"{n}: tags")
            need(len(set(t["tags"])) == len(t["tags"]), f"{n}: duplicate tags")
            p = t["parameters"]
            need(p["type"] == "object" and set(p["required"]) <= set(p["properties"]), f"{n}: schema")
            need(len(p["properties"]) - len(p["required"]) <= 2, f"{n}: too many optional params")
            need(t["when_to_use"].endswith(".") and bool(t["display_name"]), f"{n}: text")
            need(t["pinned"] or len(t["example_queries"]) >= min_examples, f"{n}: too few examples")
            need(len(set(t["example_queries"])) == len(t["example_queries"]), f"{n}: dup examples")
            counts["tools"] += 1
            counts["tools_with_3plus_examples"] += len(t["example_queries"]) >= 3
            counts["pinned_tools"] += t["pinned"]
        for m in plugin["page_mappings"]:
            need(m["category"] in cats, f"{pid}: mapping {m['page_pattern']} to foreign category")
            need(isinstance(m["priority"], int), f"{pid}: priority")
            modes.add(match_mode(m["page_pattern"]))
            counts["page_mappings"] += 1
        counts["plugins"] += 1
        counts["categories"] += len(cats)
    need(modes == {"exact", "prefix", "suffix", "contains"}, f"match modes present: {sorted(modes)}")
    return counts


def check_contracts(catalog: dict[str, Any]) -> bool:
    """Parse every plugin with ``toolsel.contracts.registry.PluginSync`` when the repo's contracts import."""
    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        from toolsel.contracts.registry import PluginSync
    except ImportError as exc:
        print(f"note: contracts not importable ({exc}); skipped the PluginSync check", file=sys.stderr)
        return False
    for plugin in catalog["plugins"]:
        PluginSync.model_validate(plugin)
    return True


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("metatool", type=Path, help="folder holding MetaTool's tools.jsonl and queries.jsonl")
    ap.add_argument(
        "out",
        type=Path,
        nargs="?",
        default=DEFAULT_OUT,
        help="output file (default: toolsel/demo/catalog.json in this repository)",
    )
    ap.add_argument("--seed", type=int, default=2310, help="seed for picking example queries")
    ap.add_argument("--examples", type=int, default=5, choices=[3, 4, 5], help="example queries per tool")
    args = ap.parse_args(argv)
    catalog = build_catalog(args.metatool, args.seed, args.examples)
    counts = validate(catalog, args.examples)
    counts["plugins_valid_as_PluginSync"] = counts["plugins"] if check_contracts(catalog) else 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = render(catalog) + "\n"
    if json.loads(text) != catalog:
        raise AssertionError("render() changed the data")
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    for key in (
        "plugins",
        "tools",
        "pinned_tools",
        "categories",
        "page_mappings",
        "tools_with_3plus_examples",
        "plugins_valid_as_PluginSync",
    ):
        print(f"{key}: {counts[key]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
