/**
 * A small bilingual (English/Chinese) concept lexicon for the domains agents
 * commonly serve. The built-in embedder adds a `concept` feature whenever a
 * text mentions one of a concept's terms, so "bill customers" and "生成发票"
 * share a feature although they share no characters. It is deliberately
 * generic — domains, not particular agents — and it is the ONLY source of
 * cross-language matching in the built-in embedder (docs/agents.md).
 *
 * English terms: a word (compared after light stemming, see `stem`), a
 * `prefix*` (compared with the lower-cased word's start), or a phrase of
 * words separated by spaces. Chinese terms: substrings of the text.
 */

/** One concept: an id, a weight multiplier (default 1) and its terms. */
export interface Concept {
  id: string;
  weight?: number;
  en: string[];
  zh: string[];
}

/** The lexicon. Keep entries generic; see docs/agents.md before extending it. */
export const CONCEPTS: readonly Concept[] = [
  { id: "translate", en: ["translat*", "interpret*", "locali*", "multilingual", "bilingual"], zh: ["翻译", "译成", "译为", "口译", "笔译", "多语言", "本地化", "译文", "外语"] },
  {
    id: "language",
    weight: 0.5,
    en: ["english", "french", "spanish", "german", "japanese", "chinese", "korean", "russian", "arabic", "portuguese", "italian", "mandarin", "language"],
    zh: ["英语", "英文", "法语", "法文", "西班牙语", "德语", "日语", "日文", "中文", "汉语", "韩语", "俄语", "阿拉伯语", "葡萄牙语", "意大利语", "语言"],
  },
  {
    id: "payment",
    en: ["pay", "payment*", "paid", "payable", "payout*", "checkout", "refund*", "charge", "charges", "charged", "transaction*", "alipay", "wechat pay", "paypal", "stripe", "credit card", "debit card", "money transfer", "collect money"],
    zh: ["付款", "支付", "收款", "退款", "转账", "扣款", "交易", "信用卡", "支付宝", "微信支付", "结账", "缴费", "打款", "收钱", "付钱", "收费"],
  },
  { id: "invoice", en: ["invoic*", "bill", "billing", "receipt*", "fapiao"], zh: ["发票", "账单", "开票", "收据", "票据"] },
  { id: "customer", weight: 0.5, en: ["customer*", "client*", "buyer*", "consumer*"], zh: ["客户", "顾客", "买家", "消费者"] },
  {
    id: "accounting",
    en: ["accounting", "accountant*", "bookkeep*", "ledger*", "expens*", "reconcil*", "financ*", "budget*", "balance sheet", "spending"],
    zh: ["会计", "记账", "账目", "报销", "对账", "财务", "费用", "预算", "账本", "开支", "支出"],
  },
  { id: "tax", en: ["tax", "taxes", "taxation", "vat", "irs"], zh: ["税"] },
  {
    id: "weather",
    en: ["weather", "forecast*", "rain*", "temperatur*", "snow*", "storm*", "humid*", "wind", "windy", "sunny", "cloudy", "climate", "umbrella", "typhoon", "hurricane", "air quality", "pollut*", "smog", "pollen", "uv index"],
    zh: ["天气", "气温", "下雨", "降雨", "雨", "预报", "温度", "刮风", "台风", "下雪", "晴", "雾霾", "空气质量", "带伞", "气象", "阴天"],
  },
  {
    id: "code",
    en: ["code", "coding", "program*", "software", "developer*", "bug", "bugs", "debug*", "refactor*", "repo", "repository", "github", "gitlab", "pull request", "merge request", "diff", "commit*", "lint*", "compil*", "python", "javascript", "typescript", "java", "golang", "rust"],
    zh: ["代码", "编程", "程序", "软件", "开发者", "开发人员", "软件开发", "调试", "重构", "代码库", "合并请求", "拉取请求"],
  },
  { id: "review", weight: 0.5, en: ["review*", "audit*", "inspect*", "proofread*"], zh: ["审查", "审核", "评审", "检查", "审阅", "把关"] },
  {
    id: "security",
    en: ["secur*", "vulnerab*", "cve", "exploit*", "malware", "threat*", "attack*", "phishing", "penetration test"],
    zh: ["安全", "漏洞", "威胁", "恶意", "攻击", "钓鱼", "渗透"],
  },
  {
    id: "schedule",
    en: ["calendar*", "schedul*", "meeting*", "appointment*", "invite*", "invitation*", "reschedul*", "agenda", "time slot", "free slot", "availability"],
    zh: ["日程", "日历", "会议", "预约", "安排", "约会", "开会", "排期", "议程", "邀请", "时间段"],
  },
  { id: "email", en: ["email*", "e mail", "mail", "inbox*", "newsletter*", "gmail", "outlook"], zh: ["邮件", "邮箱", "收件箱", "电子邮件"] },
  {
    id: "travel",
    en: ["travel*", "trip", "trips", "flight*", "hotel*", "airline*", "itinerar*", "vacation*", "holiday*", "visa", "airport*", "train ticket"],
    zh: ["旅行", "旅游", "出差", "机票", "酒店", "航班", "行程", "签证", "机场", "火车票", "高铁", "度假"],
  },
  { id: "reserve", weight: 0.5, en: ["book", "booking*", "reserv*"], zh: ["预订", "预定", "订票", "订酒店", "订机票"] },
  {
    id: "support",
    en: ["helpdesk", "help desk", "ticket*", "complaint*", "faq", "customer service", "customer support", "after sales", "troubleshoot*"],
    zh: ["客服", "工单", "投诉", "售后", "咨询", "常见问题"],
  },
  {
    id: "analytics",
    en: ["analy*", "dashboard*", "chart*", "graph*", "statistic*", "metric*", "visuali*", "insight*", "kpi", "trend*"],
    zh: ["数据", "分析", "图表", "统计", "报表", "可视化", "指标", "趋势"],
  },
  { id: "database", en: ["sql", "database*", "query", "queries", "tabl*", "postgres*", "mysql", "sqlite", "spreadsheet*", "excel"], zh: ["数据库", "表格", "电子表格"] },
  { id: "summarize", en: ["summar*", "digest*", "tldr", "condens*", "key point*", "recap*", "brief*", "minutes", "shorten*"], zh: ["摘要", "总结", "概括", "提炼", "要点", "归纳", "纪要", "简报", "缩写"] },
  { id: "document", weight: 0.5, en: ["document*", "doc", "docs", "pdf*", "paper*", "article*", "file", "files", "report*", "text", "texts"], zh: ["文档", "文件", "论文", "文章", "报告", "文本", "资料"] },
  {
    id: "legal",
    en: ["contract*", "legal*", "law", "laws", "lawyer*", "clause*", "complian*", "agreement*", "nda", "gdpr", "regulat*", "attorney*", "liabilit*"],
    zh: ["合同", "法律", "条款", "合规", "律师", "协议", "法务", "法规", "违约"],
  },
  {
    id: "shipping",
    en: ["ship", "shipping", "shipment*", "shipped", "parcel*", "courier*", "logistic*", "freight", "tracking number", "delivery status", "package tracking", "fedex", "ups", "dhl", "warehouse*"],
    zh: ["物流", "快递", "包裹", "运单", "配送", "发货", "到货", "仓库", "签收"],
  },
  { id: "image", en: ["image*", "picture*", "photo*", "illustrat*", "draw*", "paint*", "logo*", "artwork*", "poster*", "render*", "diffusion"], zh: ["图片", "图像", "画", "插画", "插图", "照片", "海报", "绘图", "配图", "头像"] },
  { id: "generate", weight: 0.5, en: ["generat*", "creat*", "produc*", "make", "draft*", "compos*"], zh: ["生成", "创建", "制作", "撰写", "起草"] },
  {
    id: "speech",
    en: ["speech*", "audio*", "voice*", "transcri*", "subtitl*", "caption*", "podcast*", "recording*", "dictat*", "spoken", "text to speech", "tts", "asr"],
    zh: ["语音", "音频", "转写", "转录", "字幕", "录音", "听写", "朗读", "播客", "转文字"],
  },
  {
    id: "hiring",
    en: ["recruit*", "hiring", "hire", "candidate*", "resume*", "cv", "interview*", "job", "jobs", "applicant*", "talent*", "onboard*", "human resources", "hr"],
    zh: ["招聘", "简历", "面试", "候选人", "求职", "人才", "入职", "人事", "应聘", "岗位", "职位"],
  },
  { id: "news", en: ["news", "headline*", "journalis*", "breaking", "press release*", "current events"], zh: ["新闻", "头条", "资讯", "时事", "快讯", "热点"] },
  {
    id: "markets",
    en: ["stock*", "share price*", "investing", "investment*", "investor*", "portfolio*", "trading", "trader*", "crypto*", "bitcoin", "equit*", "nasdaq", "dividend*", "ticker*"],
    zh: ["股票", "股市", "行情", "投资", "基金", "证券", "股价", "涨跌", "炒股", "大盘", "理财"],
  },
  { id: "health", en: ["health*", "medic*", "doctor*", "symptom*", "patient*", "drug*", "clinic*", "diagnos*", "hospital*"], zh: ["健康", "医疗", "医生", "症状", "病人", "药", "诊断", "医院", "看病"] },
  { id: "shopping", en: ["shop*", "product*", "ecommerce", "e commerce", "cart", "purchas*", "price*", "discount*", "coupon*", "retail*"], zh: ["购物", "商品", "订单", "电商", "购买", "价格", "折扣", "优惠", "下单", "网购"] },
  { id: "social", en: ["social", "twitter", "tweet*", "instagram", "weibo", "linkedin", "facebook", "followers"], zh: ["微博", "社交", "发帖", "朋友圈", "小红书", "抖音", "粉丝"] },
  { id: "websearch", en: ["search*", "web", "browse*", "crawl*", "scrap*", "lookup", "google"], zh: ["搜索", "检索", "网页", "爬虫", "查找", "上网"] },
  { id: "writing", en: ["writ*", "copywrit*", "blog*", "essay*", "rewrit*", "paraphras*", "grammar", "edit", "editing", "polish*"], zh: ["写作", "文案", "博客", "润色", "改写", "作文", "语法", "写文章"] },
  { id: "navigation", en: ["map", "maps", "navigat*", "route*", "direction*", "commute*", "traffic"], zh: ["地图", "导航", "路线", "交通", "路况", "怎么走"] },
  { id: "currency", en: ["currenc*", "exchange rate*", "forex", "fx", "usd", "eur", "rmb", "yuan", "dollar*"], zh: ["汇率", "外汇", "货币", "换汇", "人民币", "美元", "欧元"] },
  { id: "reminder", en: ["remind*", "todo", "to do", "task*", "deadline*", "due date*", "follow up"], zh: ["提醒", "待办", "任务", "截止", "备忘", "到期"] },
  { id: "ocr", en: ["ocr", "scan*", "extract*", "recogni*", "handwrit*", "parse", "parsing"], zh: ["识别", "扫描", "提取", "手写", "解析", "文字识别"] },
  { id: "monitoring", en: ["monitor*", "uptime", "incident*", "deploy*", "server*", "kubernetes", "alert*", "on call", "outage*", "latency", "devops", "log", "logs"], zh: ["监控", "运维", "部署", "告警", "服务器", "日志", "宕机", "故障"] },
  { id: "food", en: ["food", "recipe*", "cook*", "restaurant*", "meal*", "diet*", "nutrition*", "calorie*"], zh: ["美食", "菜谱", "做菜", "餐厅", "外卖", "饮食", "营养", "热量", "食谱"] },
  { id: "education", en: ["tutor*", "teach*", "lesson*", "homework", "exam", "exams", "examination*", "quiz*", "student*", "course*", "learn*", "math*"], zh: ["辅导", "教学", "课程", "作业", "考试", "学生", "学习", "数学", "题目"] },
];
