"""Small synthetic tables for the corpus schemas, the same for the same seed.

Synthetic DATA, not privacy noise: a seeded NumPy generator is right here. Every table is built
so that the exact answer of raw DuckDB equals the answer of the bounded relation dpsql reads:
no person has more rows than the policy's `max_rows`, every value lies within its declared
bounds, and every declared `values` list is covered. Then `|noisy - exact| <= ci95` is the
interval's own coverage, not a bias of contribution bounding.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from dpsql.demo.people import DEPTS, generate_people

Tables = dict[str, pd.DataFrame]


def _dates(rng: np.random.Generator, start: str, end: str, size: int) -> np.ndarray:
    lo, hi = np.datetime64(start, "D"), np.datetime64(end, "D")
    return lo + rng.integers(0, int((hi - lo).astype(int)) + 1, size).astype("timedelta64[D]")


def _date_column(days: np.ndarray) -> np.ndarray:
    """datetime.date objects: DuckDB reads them as DATE (datetime64 would be a TIMESTAMP)."""
    return days.astype("datetime64[D]").astype(object)


def _timestamps(rng: np.random.Generator, start: str, end: str, size: int) -> np.ndarray:
    lo, hi = np.datetime64(start, "s"), np.datetime64(end, "s")
    seconds = lo + rng.integers(0, int((hi - lo).astype(int)) + 1, size).astype("timedelta64[s]")
    return seconds.astype("datetime64[us]")  # DuckDB's TIMESTAMP


def _pick(rng: np.random.Generator, values: list[str] | tuple[str, ...], size: int) -> list[str]:
    return [values[i] for i in rng.integers(0, len(values), size)]


# --- TPC-H at a tiny scale (customer is the privacy unit; lineitem carries l_custkey) ---------

REGIONS = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"]
NATIONS = [  # (name, region key), the 25 nations of the TPC-H specification
    ("ALGERIA", 0), ("ARGENTINA", 1), ("BRAZIL", 1), ("CANADA", 1), ("EGYPT", 4), ("ETHIOPIA", 0),
    ("FRANCE", 3), ("GERMANY", 3), ("INDIA", 2), ("INDONESIA", 2), ("IRAN", 4), ("IRAQ", 4),
    ("JAPAN", 2), ("JORDAN", 4), ("KENYA", 0), ("MOROCCO", 0), ("MOZAMBIQUE", 0), ("PERU", 1),
    ("CHINA", 2), ("ROMANIA", 3), ("SAUDI ARABIA", 4), ("VIETNAM", 2), ("RUSSIA", 3),
    ("UNITED KINGDOM", 3), ("UNITED STATES", 1),
]
SEGMENTS = ["AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"]
PRIORITIES = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"]
SHIPMODES = ["AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"]
INSTRUCTS = ["COLLECT COD", "DELIVER IN PERSON", "NONE", "TAKE BACK RETURN"]
TYPE_1 = ["ECONOMY", "LARGE", "MEDIUM", "PROMO", "SMALL", "STANDARD"]
TYPE_2 = ["ANODIZED", "BRUSHED", "BURNISHED", "PLATED", "POLISHED"]
TYPE_3 = ["BRASS", "COPPER", "NICKEL", "STEEL", "TIN"]
CONTAINER_1 = ["JUMBO", "LG", "MED", "SM", "WRAP"]
CONTAINER_2 = ["BAG", "BOX", "CAN", "CASE", "DRUM", "JAR", "PACK", "PKG"]
COLOURS = ["almond", "antique", "azure", "beige", "blush", "forest", "green", "ivory", "khaki", "lace",
           "lime", "navy", "olive", "orchid", "peach", "red", "rose", "snow", "tan", "violet"]
TPCH_CUSTOMERS = 600
TPCH_MAX_ORDERS = 3      # orders per customer: the policy's max_rows for orders
TPCH_MAX_LINES = 4       # lines per order: lineitem's max_rows is 3 * 4 = 12


def tpch(seed: int = 1) -> Tables:
    rng = np.random.default_rng(seed)
    region = pd.DataFrame({"r_regionkey": np.arange(5), "r_name": REGIONS, "r_comment": ["region"] * 5})
    nation = pd.DataFrame({"n_nationkey": np.arange(25), "n_name": [n for n, _ in NATIONS],
                           "n_regionkey": [r for _, r in NATIONS], "n_comment": ["nation"] * 25})
    n_supp = 20
    supplier = pd.DataFrame({
        "s_suppkey": np.arange(1, n_supp + 1), "s_name": [f"Supplier#{i:09d}" for i in range(1, n_supp + 1)],
        "s_address": [f"addr {i}" for i in range(1, n_supp + 1)], "s_nationkey": rng.integers(0, 25, n_supp),
        "s_phone": [f"{10 + k}-555-{i:04d}" for i, k in enumerate(rng.integers(0, 25, n_supp))],
        "s_acctbal": np.round(rng.uniform(-999.99, 9999.99, n_supp), 2),
        "s_comment": ["Customer slow Complaints" if i % 7 == 0 else "quick supplier" for i in range(n_supp)],
    })
    n_part = 200
    ptypes = [f"{a} {b} {c}" for a, b, c in zip(_pick(rng, TYPE_1, n_part), _pick(rng, TYPE_2, n_part), _pick(rng, TYPE_3, n_part))]
    retail = np.round(900 + np.arange(1, n_part + 1) % 200 + rng.uniform(0, 1000, n_part), 2)
    part = pd.DataFrame({
        "p_partkey": np.arange(1, n_part + 1),
        "p_name": [" ".join(rng.choice(COLOURS, 3, replace=False)) for _ in range(n_part)],
        "p_mfgr": [f"Manufacturer#{m}" for m in rng.integers(1, 6, n_part)],
        "p_brand": [f"Brand#{m}{n}" for m, n in zip(rng.integers(1, 6, n_part), rng.integers(1, 6, n_part))],
        "p_type": ptypes, "p_size": rng.integers(1, 51, n_part),
        "p_container": [f"{a} {b}" for a, b in zip(_pick(rng, CONTAINER_1, n_part), _pick(rng, CONTAINER_2, n_part))],
        "p_retailprice": retail, "p_comment": ["part"] * n_part,
    })
    ps_rows = [(p, (p + k * 5) % n_supp + 1) for p in range(1, n_part + 1) for k in range(4)]
    partsupp = pd.DataFrame({
        "ps_partkey": [p for p, _ in ps_rows], "ps_suppkey": [s for _, s in ps_rows],
        "ps_availqty": rng.integers(1, 10000, len(ps_rows)), "ps_supplycost": np.round(rng.uniform(1, 1000, len(ps_rows)), 2),
        "ps_comment": ["partsupp"] * len(ps_rows),
    })
    n_cust = TPCH_CUSTOMERS
    cust_nation = rng.integers(0, 25, n_cust)
    customer = pd.DataFrame({
        "c_custkey": np.arange(1, n_cust + 1), "c_name": [f"Customer#{i:09d}" for i in range(1, n_cust + 1)],
        "c_address": [f"street {i}" for i in range(1, n_cust + 1)], "c_nationkey": cust_nation,
        "c_phone": [f"{10 + k}-{i % 900 + 100}-555-{i:04d}" for i, k in enumerate(cust_nation)],
        "c_acctbal": np.round(rng.uniform(-999.99, 9999.99, n_cust), 2),
        "c_mktsegment": _pick(rng, SEGMENTS, n_cust), "c_comment": ["customer"] * n_cust,
    })
    # A third of the customers have no order (as in the specification: custkey % 3 == 0).
    n_orders = np.where(customer["c_custkey"] % 3 == 0, 0, rng.integers(1, TPCH_MAX_ORDERS + 1, n_cust))
    o_cust = np.repeat(customer["c_custkey"].to_numpy(), n_orders)
    n_ord = len(o_cust)
    o_date = _dates(rng, "1992-01-01", "1998-08-02", n_ord)
    orders = pd.DataFrame({
        "o_orderkey": np.arange(1, n_ord + 1), "o_custkey": o_cust,
        "o_orderstatus": _pick(rng, ["F", "O", "P"], n_ord),
        "o_totalprice": np.zeros(n_ord), "o_orderdate": _date_column(o_date),
        "o_orderpriority": _pick(rng, PRIORITIES, n_ord), "o_clerk": [f"Clerk#{c:09d}" for c in rng.integers(1, 50, n_ord)],
        "o_shippriority": np.zeros(n_ord, dtype=np.int64),
        "o_comment": ["special packages requests" if c else "regular deposits" for c in rng.random(n_ord) < 0.2],
    })
    n_lines = rng.integers(1, TPCH_MAX_LINES + 1, n_ord)
    l_order = np.repeat(orders["o_orderkey"].to_numpy(), n_lines)
    n_li = len(l_order)
    l_part = rng.integers(1, n_part + 1, n_li)
    l_supp = np.array([(p + k * 5) % n_supp + 1 for p, k in zip(l_part, rng.integers(0, 4, n_li))])
    qty = rng.integers(1, 51, n_li)
    ext = np.round(qty * retail[l_part - 1], 2)
    disc = np.round(rng.integers(0, 11, n_li) / 100, 2)
    tax = np.round(rng.integers(0, 9, n_li) / 100, 2)
    odate = np.repeat(o_date, n_lines)
    ship = odate + rng.integers(1, 122, n_li).astype("timedelta64[D]")
    commit = odate + rng.integers(30, 91, n_li).astype("timedelta64[D]")
    receipt = ship + rng.integers(1, 31, n_li).astype("timedelta64[D]")
    cutoff = np.datetime64("1995-06-17")
    lineitem = pd.DataFrame({
        "l_orderkey": l_order, "l_partkey": l_part, "l_suppkey": l_supp,
        "l_linenumber": np.concatenate([np.arange(1, k + 1) for k in n_lines]),
        "l_quantity": qty, "l_extendedprice": ext, "l_discount": disc, "l_tax": tax,
        "l_returnflag": np.where(receipt <= cutoff, np.where(rng.random(n_li) < 0.5, "R", "A"), "N"),
        "l_linestatus": np.where(ship > cutoff, "O", "F"),
        "l_shipdate": _date_column(ship), "l_commitdate": _date_column(commit), "l_receiptdate": _date_column(receipt),
        "l_shipinstruct": _pick(rng, INSTRUCTS, n_li), "l_shipmode": _pick(rng, SHIPMODES, n_li),
        "l_comment": ["lineitem"] * n_li,
        "l_custkey": np.repeat(o_cust, n_lines),  # denormalised, as the FLEX and PrivateSQL papers do
    })
    totals = (lineitem["l_extendedprice"] * (1 + lineitem["l_tax"]) * (1 - lineitem["l_discount"])).groupby(lineitem["l_orderkey"]).sum()
    orders["o_totalprice"] = np.round(totals.reindex(orders["o_orderkey"]).to_numpy(), 2)
    return {"region": region, "nation": nation, "supplier": supplier, "part": part, "partsupp": partsupp,
            "customer": customer, "orders": orders, "lineitem": lineitem}


# --- SmartNoise's PUMS (pid with up to 2 rows, as PUMS_dup) -----------------------------------

PUMS_PERSONS = 1000


def pums(seed: int = 2) -> Tables:
    rng = np.random.default_rng(seed)
    rows = rng.integers(1, 3, PUMS_PERSONS)
    pid = np.repeat(np.arange(1, PUMS_PERSONS + 1), rows)
    n = len(pid)
    per = lambda values: np.repeat(values, rows)  # noqa: E731 - a person's constant attributes
    educ = np.minimum(16, np.maximum(1, np.round(rng.normal(10, 3, PUMS_PERSONS)).astype(np.int64)))
    educ[:16] = np.arange(1, 17)  # every declared value present
    race = 1 + rng.choice(6, PUMS_PERSONS, p=[0.6, 0.15, 0.1, 0.07, 0.05, 0.03])
    race[:6] = np.arange(1, 7)
    frame = pd.DataFrame({
        "pid": pid, "age": per(rng.integers(18, 94, PUMS_PERSONS)), "sex": per(rng.integers(0, 2, PUMS_PERSONS)),
        "educ": per(educ), "race": per(race),
        "income": np.round(np.minimum(500000, rng.lognormal(10.2, 1.0, n))).astype(np.int64),
        "married": per(rng.integers(0, 2, PUMS_PERSONS)),
    })
    return {"pums": frame}


# --- Qrlew's census (the Adult data set's columns; one row per person) -------------------------

WORKCLASS = ["Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov", "State-gov", "Without-pay", "Married-civ"]
EDUCATION = ["Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th", "HS-grad", "Some-college",
             "Assoc-voc", "Assoc-acdm", "Bachelors", "Masters", "Prof-school", "Doctorate"]
MARITAL = ["Divorced", "Married-AF-spouse", "Married-civ-spouse", "Married-spouse-absent", "Never-married", "Separated", "Widowed"]
COUNTRIES = ["United-States", "Mexico", "Philippines", "Germany", "Canada", "India", "England", "Cuba", "Italy", "Holand-Netherlands"]
CENSUS_ROWS = 2000


def census(seed: int = 3) -> Tables:
    rng = np.random.default_rng(seed)
    n = CENSUS_ROWS
    education_num = rng.integers(1, 17, n)
    frame = pd.DataFrame({
        "id": np.arange(1, n + 1), "age": rng.integers(17, 91, n), "workclass": _pick(rng, WORKCLASS, n),
        "fnlwgt": rng.integers(10000, 1000000, n), "education": [EDUCATION[e - 1] for e in education_num],
        "education_num": education_num, "marital_status": _pick(rng, MARITAL, n),
        "sex": _pick(rng, ["Male", "Female"], n),
        "capital_loss": np.where(rng.random(n) < 0.3, rng.integers(0, 4357, n), 0),
        "native_country": _pick(rng, COUNTRIES, n),
    })
    return {"census": frame}


# --- Qrlew's retail test schema (households) --------------------------------------------------

RETAIL_HOUSEHOLDS = 500
RETAIL_MAX_TRANSACTIONS = 5


def retail(seed: int = 4) -> Tables:
    rng = np.random.default_rng(seed)
    h = RETAIL_HOUSEHOLDS
    demographics = pd.DataFrame({
        "household_id": np.arange(1, h + 1), "age": rng.integers(18, 91, h),
        "income": np.round(rng.uniform(10000, 250000, h), 2),
        "home_ownership": _pick(rng, ["Homeowner", "Renter", "Unknown"], h),
        "marital_status": _pick(rng, ["Married", "Single", "Unknown"], h),
        "household_size": rng.integers(1, 7, h), "household_comp": _pick(rng, ["1 Adult Kids", "2 Adults Kids", "2 Adults No Kids", "Single Female", "Single Male"], h),
        "kids_count": rng.integers(0, 6, h),
    })
    n_prod = 50
    products = pd.DataFrame({
        "product_id": np.arange(1, n_prod + 1), "manufacturer_id": rng.integers(1, 10, n_prod),
        "department": _pick(rng, ["GROCERY", "DRUG GM", "PRODUCE", "MEAT", "PASTRY"], n_prod),
        "brand": _pick(rng, ["National", "Private"], n_prod),
        "product_category": _pick(rng, ["SOFT DRINKS", "BAKED BREAD", "CHEESE", "BEEF", "FROZEN PIZZA"], n_prod),
        "product_type": _pick(rng, ["TYPE A", "TYPE B", "TYPE C"], n_prod),
        "package_size": _pick(rng, ["12 OZ", "16 OZ", "1 LB"], n_prod),
    })
    k = rng.integers(1, RETAIL_MAX_TRANSACTIONS + 1, h)
    hid = np.repeat(demographics["household_id"].to_numpy(), k)
    n = len(hid)
    transactions = pd.DataFrame({
        "household_id": hid, "store_id": rng.integers(1, 11, n), "basket_id": np.arange(1, n + 1),
        "product_id": rng.integers(1, n_prod + 1, n), "quantity": rng.integers(0, 11, n),
        "sales_value": np.round(rng.uniform(0, 100, n), 2), "retail_disc": np.round(rng.uniform(0, 10, n), 2),
        "coupon_disc": np.round(rng.uniform(0, 5, n), 2), "coupon_match_disc": np.round(rng.uniform(0, 2, n), 2),
        "week": [f"W{w:02d}" for w in rng.integers(1, 53, n)],
        "transaction_timestamp": _date_column(_dates(rng, "2023-01-01", "2023-12-31", n)),
    })
    return {"retail_demographics": demographics, "retail_transactions": transactions, "retail_products": products}


# --- Metabase's sample database --------------------------------------------------------------

SOURCES = ["Affiliate", "Facebook", "Google", "Organic", "Twitter"]
STATES = ["CA", "IL", "NY", "TX", "WA"]
CATEGORIES = ["Doohickey", "Gadget", "Gizmo", "Widget"]
METABASE_PEOPLE = 800
METABASE_MAX_ORDERS = 4
METABASE_MAX_REVIEWS = 2


def metabase(seed: int = 5) -> Tables:
    rng = np.random.default_rng(seed)
    n = METABASE_PEOPLE
    people = pd.DataFrame({
        "id": np.arange(1, n + 1), "address": [f"{i} Main St" for i in range(n)], "email": [f"p{i}@example.com" for i in range(n)],
        "name": [f"Person {i}" for i in range(n)], "city": _pick(rng, ["Springfield", "Riverside", "Franklin", "Greenville"], n),
        "state": _pick(rng, STATES, n), "source": _pick(rng, SOURCES, n), "birth_date": _date_column(_dates(rng, "1960-01-01", "2004-12-31", n)),
        "zip": [f"{z:05d}" for z in rng.integers(10000, 99999, n)], "latitude": np.round(rng.uniform(25, 49, n), 4),
        "longitude": np.round(rng.uniform(-124, -67, n), 4), "created_at": _timestamps(rng, "2022-04-01T00:00:00", "2026-04-30T23:59:59", n),
    })
    n_prod = 40
    products = pd.DataFrame({
        "id": np.arange(1, n_prod + 1), "ean": [f"{e:013d}" for e in rng.integers(10**12, 10**13 - 1, n_prod)],
        "title": [f"Product {i}" for i in range(1, n_prod + 1)], "category": [CATEGORIES[i % 4] for i in range(n_prod)],
        "vendor": _pick(rng, ["Acme", "Globex", "Initech", "Umbrella"], n_prod), "price": np.round(rng.uniform(15, 100, n_prod), 2),
        "rating": np.round(rng.uniform(1, 5, n_prod), 1), "created_at": _timestamps(rng, "2022-01-01T00:00:00", "2022-12-31T23:59:59", n_prod),
    })
    k = rng.integers(0, METABASE_MAX_ORDERS + 1, n)
    user = np.repeat(people["id"].to_numpy(), k)
    m = len(user)
    product = rng.integers(1, n_prod + 1, m)
    quantity = rng.integers(1, 11, m)
    subtotal = np.round(products["price"].to_numpy()[product - 1] * np.minimum(quantity, 2), 2)
    discount = np.where(rng.random(m) < 0.1, np.round(rng.uniform(0, 10, m), 2), np.nan)
    tax = np.round(subtotal * 0.07, 2)
    orders = pd.DataFrame({
        "id": np.arange(1, m + 1), "user_id": user, "product_id": product, "subtotal": subtotal, "tax": tax,
        "total": np.round(subtotal + tax - np.nan_to_num(discount), 2), "discount": discount,
        "created_at": _timestamps(rng, "2022-05-01T00:00:00", "2026-04-30T23:59:59", m), "quantity": quantity,
    })
    r = rng.integers(1, METABASE_MAX_REVIEWS + 1, 300)
    reviewer = np.repeat([f"reviewer{i}" for i in range(300)], r)
    q = len(reviewer)
    reviews = pd.DataFrame({
        "id": np.arange(1, q + 1), "product_id": rng.integers(1, n_prod + 1, q), "reviewer": reviewer,
        "rating": rng.integers(1, 6, q), "body": ["fine"] * q, "created_at": _timestamps(rng, "2022-06-01T00:00:00", "2026-04-30T23:59:59", q),
    })
    states = pd.DataFrame({"code": STATES, "name": ["California", "Illinois", "New York", "Texas", "Washington"],
                           "region": ["West", "Midwest", "Northeast", "South", "West"]})
    return {"people": people, "orders": orders, "products": products, "reviews": reviews, "states": states}


# --- the demo's people and depts, with a hire date, visits, and BigQuery's example tables -----

PEOPLE_ROWS = 3000
ITEMS = ["glue", "pen", "pencil", "scissors", "paper"]


def people(seed: int = 20261122) -> Tables:
    rng = np.random.default_rng(seed)
    frame = generate_people(PEOPLE_ROWS, seed=seed)  # 1-3 rows per person: max_rows = 3 drops nothing
    persons = frame["person_id"].drop_duplicates().to_numpy()
    hired = dict(zip(persons, _date_column(_dates(rng, "2015-01-01", "2024-12-31", len(persons)))))
    frame["hired"] = frame["person_id"].map(hired).astype(object)
    frame["seen"] = _timestamps(rng, "2024-01-01T00:00:00", "2025-12-31T23:59:59", len(frame))
    depts = pd.DataFrame({"name": list(DEPTS), "floor": [i % 4 + 1 for i in range(len(DEPTS))],
                          "budget": [float(100000 * (i + 1)) for i in range(len(DEPTS))]})
    k = rng.integers(0, 3, len(persons))
    vid = np.repeat(persons, k)
    visits = pd.DataFrame({"person_id": vid, "site": _pick(rng, ["north", "south"], len(vid)),
                           "visited": _date_column(_dates(rng, "2024-01-01", "2024-12-31", len(vid))), "duration": rng.integers(0, 121, len(vid))})
    n_prof = 400
    prof_rows = rng.integers(1, 4, n_prof)
    pid = np.repeat(np.arange(1, n_prof + 1), prof_rows)
    professors = pd.DataFrame({"id": pid, "item": _pick(rng, ITEMS, len(pid)), "quantity": rng.integers(0, 101, len(pid))})
    s_rows = rng.integers(1, 4, n_prof)
    sid = np.repeat(np.arange(1, n_prof + 1), s_rows)
    students = pd.DataFrame({"id": sid, "item": _pick(rng, ITEMS, len(sid)), "quantity": rng.integers(0, 101, len(sid))})
    return {"people": frame, "depts": depts, "visits": visits, "professors": professors, "students": students}


# --- Tumult Analytics' library and PipelineDP's restaurant visits -----------------------------

GENRES = ["Comics", "Fantasy", "Mystery", "Romance", "Science"]
LIBRARY_MEMBERS = 800
LIBRARY_MAX_CHECKOUTS = 5
RESTAURANT_MAX_VISITS = 4


def library(seed: int = 6) -> Tables:
    rng = np.random.default_rng(seed)
    n = LIBRARY_MEMBERS
    members = pd.DataFrame({
        "id": np.arange(1, n + 1), "name": [f"member {i}" for i in range(n)], "age": rng.integers(5, 100, n),
        "gender": _pick(rng, ["female", "male", "nonbinary", "unspecified"], n),
        "education_level": _pick(rng, ["up-to-high-school", "high-school-diploma", "bachelors-associate", "masters-degree", "doctorate-professional"], n),
        "zip_code": [f"{z:05d}" for z in rng.integers(10000, 10100, n)], "books_borrowed": rng.integers(0, 200, n),
        "favorite_genres": _pick(rng, GENRES, n), "date_joined": _date_column(_dates(rng, "2012-01-01", "2021-12-31", n)),
    })
    k = rng.integers(0, LIBRARY_MAX_CHECKOUTS + 1, n)
    member = np.repeat(members["id"].to_numpy(), k)
    m = len(member)
    checkouts = pd.DataFrame({
        "member_id": member, "checkout_date": _timestamps(rng, "2021-01-01T00:00:00", "2021-12-31T23:59:59", m),
        "title": [f"title {t}" for t in rng.integers(0, 300, m)], "genre": _pick(rng, GENRES, m),
    })
    v = 600
    kv = rng.integers(1, RESTAURANT_MAX_VISITS + 1, v)
    visitor = np.repeat(np.arange(1, v + 1), kv)
    q = len(visitor)
    restaurant = pd.DataFrame({
        "visitor_id": visitor, "time_entered": _timestamps(rng, "2021-01-04T09:00:00", "2021-01-10T21:00:00", q),
        "time_spent_minutes": rng.integers(5, 121, q), "spent_money": rng.integers(0, 61, q),
        "day": rng.integers(1, 8, q),
    })
    return {"members": members, "checkouts": checkouts, "restaurant_visits": restaurant}


SCHEMAS: dict[str, Callable[[], Tables]] = {
    "tpch": tpch, "pums": pums, "census": census, "retail": retail, "metabase": metabase, "people": people, "library": library,
}


def build(schema: str) -> Tables:
    """The tables of one schema (every call builds them afresh: callers may keep them)."""
    return SCHEMAS[schema]()

