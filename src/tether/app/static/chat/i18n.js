// UI text in Chinese (the default) and English. t(key, vars) fills {name} placeholders.

const STRINGS = {
  zh: {
    skipToInput: "跳到输入框", conversations: "会话", newChat: "新建会话", searchLabel: "按标题搜索会话",
    searchPlaceholder: "搜索会话标题", recent: "最近会话", archivedList: "已归档会话", showArchived: "已归档",
    loadMore: "加载更多", logout: "退出登录", stop: "停止", relogin: "重新登录", messages: "消息",
    emptyTitle: "有什么可以帮您？",
    emptyHint: "输入问题开始新的会话，例如“请分析最近30天贵金属规则调整相关的客服问题并生成报告”。",
    emptyHint_erp: "输入问题开始新的会话，例如“新建一张报价单给<客户>”、“把报价单<单号>的备注改成<内容>”、“<客户>的应收账款有多少超期了？”。",
    inputLabel: "输入消息", inputPlaceholder: "输入消息，Enter 发送，Shift+Enter 换行", send: "发送",
    loginTitle: "登录 tether", loginMethod: "登录方式", loginPassword: "账号密码", loginPassword_erp: "ERP 账号", loginToken: "开发令牌",
    username: "用户名", password: "密码", token: "令牌", login: "登录",
    loginFailed: "登录失败：{reason}", loginWrongToken: "令牌无效或已过期", loginNoErp: "此服务器未启用 ERP 登录",
    loginMissing: "请填写用户名和密码", loginMissingToken: "请填写令牌",
    sessionExpired: "登录已过期，请重新登录；当前会话会保留。", loginLapsed: "登录已过期：重新登录后再操作。",
    loginExpiredEvent: "业务系统登录已过期。重新登录后，请重新发送您的请求。",
    resend: "重新发送上一条", rename: "重命名", archive: "归档", renameLabel: "新标题",
    renameOf: "重命名“{title}”", archiveOf: "归档“{title}”", unarchiveOf: "取消归档“{title}”", save: "保存", cancel: "取消",
    noConversations: "暂无会话", noMatches: "没有匹配的会话", notSupported: "服务器暂不支持此操作（{status}）",
    you: "我", assistant: "助手", copy: "复制", copied: "已复制", copyFailed: "复制失败",
    tools: "工具调用（{n}）", thought: "思考过程", toolRequested: "已请求", toolRunning: "执行中", toolDone: "成功", toolFailed: "失败",
    toolWaiting: "等待回调", toolCancelled: "已取消", arguments: "参数", result: "结果", error: "错误",
    duration: "{ms} 毫秒", skills: "技能：{names}",
    status_RUNNING: "运行中", status_SUCCEEDED: "已完成", status_FAILED: "失败", status_CANCELLED: "已停止",
    status_WAITING_ASYNC_CALLBACK: "等待外部任务", status_WAITING_USER_INPUT: "等待您的回答",
    status_WAITING_CONFIRMATION: "等待确认",
    stopped: "已停止此轮回答。", failed: "本轮失败：{reason}", thinking: "正在思考…",
    answering: "正在回答", answerDone: "回答完成",
    outcome_no_rows: "无记录", outcome_not_granted: "无权限", outcome_not_understood: "未理解", notFound: "找不到这个会话（可能属于其他用户）。",
    question: "需要您的回答", freeText: "或输入其他回答", submit: "提交", answered: "已回答：{answer}",
    form: "请填写表单", required: "必填", addLine: "添加行", removeLine: "删除此行", lines: "明细",
    lineNo: "行", formSubmitted: "表单已提交", formProblems: "表单有 {n} 处需要修改", yes: "是", no: "否",
    choose: "请选择", refSearch: "输入名称或编码搜索", refNone: "没有您可见的匹配记录",
    refPrice: "单价 {price}", refChosen: "已选：{label}", refUnavailable: "暂时无法搜索；可直接输入编码或名称，提交时核对。",
    problem_required: "必填项", problem_max_length: "超过最大长度", problem_option: "不是可选的值",
    problem_date: "日期格式应为 YYYY-MM-DD", problem_read_only: "只读字段，不能修改", problem_unknown: "不是此表单的字段",
    problem_type_integer: "请输入整数", problem_type_number: "请输入数字",
    problem_min: "不能小于 {min}", problem_positive: "必须大于 0", problem_max: "必须小于 {max}",
    problem_max_lines: "明细最多 {n} 行", problem_min_lines: "请至少添加 {n} 行明细", problem_ref: "没有您可以查看的匹配记录",
    problem_ambiguous: "匹配到多条记录，请选择一条或输入编码",
    // tools' failures by code (core/error_messages.py's and the ERP pack's messages.py say the same for the planner)
    "err_tool.unknown": "助手要执行的一步并不存在，请换个说法再试。",
    "err_tool.not_allowed": "这一步不能用在这个请求里，请换个说法再试。",
    "err_tool.not_authorised": "您没有执行这一步的权限（缺少：{grants}）。",
    "err_tool.bad_arguments": "助手给这一步的参数格式不对，请再试一次。",
    "err_tool.invalid_arguments": "助手给这一步的参数不符合要求，请换个说法再试。",
    "err_tool.budget": "您每分钟最多可调用 {limit} 次工具，本分钟的额度已用完，请 {seconds} 秒后再试。",
    "err_tool.timeout": "这一步在 {seconds} 秒内没有完成，请稍后再试。",
    "err_tool.unavailable": "{system} 暂时无法访问，请 {seconds} 秒后再试。",
    "err_tool.failed": "这一步出错了，请换个说法或稍后再试。",
    "err_ask_user.empty": "助手想向您提问，但问题是空的，请再说一次您的需求。",
    "err_skill.unknown": "没有名为 {skill} 的技能，请换个说法再试。",
    "err_job.failed": "后台任务没有完成，请稍后再试。",
    "err_turn.timeout": "这一轮超过了 {seconds} 秒的时间上限，已停止，请稍后再试或把问题拆小一些。",
    "err_turn.max_rounds": "助手调用了 {rounds} 轮仍没有给出答复，已停止，请换个说法再试。",
    "err_turn.max_tool_calls": "助手在这一轮已用满 {calls} 次工具调用仍没有完成，已停止，请把问题拆小一些再试。",
    "err_model.failed": "模型服务出错了，请稍后再试。",
    // the abuse limits' 429 answers ({error, code, params}; resetAt shown as local time)
    "err_limit.daily_tokens": "您今天的模型用量额度（{limit} 个 token）已用完，将于 {resetAt} 恢复。",
    "err_limit.daily_model_calls": "您今天的模型调用额度（{limit} 次）已用完，将于 {resetAt} 恢复。",
    "err_limit.login_user": "这个用户名登录失败的次数过多，已暂时锁定，请于 {resetAt} 之后再试。",
    "err_limit.login_address": "从您的网络地址登录失败的次数过多，已暂时锁定，请于 {resetAt} 之后再试。",
    "err_limit.login_busy_user": "这个用户名同时进行的登录尝试过多，请 {seconds} 秒后再试。",
    "err_limit.login_busy_address": "从您的网络地址同时进行的登录尝试过多，请 {seconds} 秒后再试。",
    "err_erp.unreachable": "ERP 暂时无法访问，请 {seconds} 秒后再试。",
    "err_erp.login_expired": "ERP 登录已过期，请重新登录后再试。",
    "err_erp.no_access": "表单 {form} 不存在，或您无权使用它。",
    "err_erp.no_bill": "没有找到您可以查看的{form} {bill_no}。请核对单号。",
    "err_erp.read_only": "{form}是只读的，不能通过助手写入。", "err_erp.no_examine": "{form}没有审核操作。",
    "err_erp.no_change": "{record} 已经是这些值，没有需要修改的内容。",
    "err_erp.not_found": "{label}“{value}”没有您可以查看的匹配记录。",
    "err_erp.invalid_values": "填写的内容不符合{form}：{problems}。",
    "err_erp.problem.required": "{label}为必填项",
    "err_erp.problem.type": "{label}的值格式不对",
    "err_erp.problem.option": "{label}不是可选的值",
    "err_erp.problem.read_only": "{label}是只读的，由 ERP 填写",
    "err_erp.problem.unknown": "{label}不是此表单的字段",
    "err_erp.problem.max_length": "{label}超过最大长度",
    "err_erp.problem.date": "{label}的日期格式应为 YYYY-MM-DD",
    "err_erp.problem.min": "{label}小于允许的最小值",
    "err_erp.problem.max": "{label}超过允许的最大值",
    "err_erp.problem.max_lines": "{label}行数过多",
    "err_erp.login_missing": "这需要 ERP 登录，请用 ERP 账号登录后再试。",
    "err_erp.refused": "ERP 拒绝了这个请求（{status}），请核对后再试。",
    "err_erp.no_record": "没有找到您可以查看的{form} {record}。请核对单号或编号。",
    "err_erp.bad_record_id": "“{value}”不是有效的单号或记录编号（只能含字母、数字和 - _ . :，最多 64 个字符）。",
    "err_erp.needs_record": "请说明要操作的是哪一张单据（单号或记录编号）。",
    "err_erp.needs_source": "请说明要由哪一张单据生成（来源单据的单号）。",
    "err_erp.needs_session": "写入只能在会话中提议，由您确认后才执行。",
    "err_erp.no_line": "{record} 没有第 {lines} 行明细。",
    "err_erp.bad_op": "不支持“{op}”：只能新增、修改、删除、审核或生成单据。",
    "err_erp.cannot_edit": "这个 ERP 连接不支持修改待确认的提议，请取消后重新提议。",
    "err_erp.nothing_to_edit": "这个提议没有可以修改的值。",
    "err_erp.ambiguous_ref": "有一项引用匹配到多条记录，请用编码指明。",
    "err_erp.choose_one": "请从候选项中选择一个。",
    "err_erp.no_views": "您的表单都没有可查询的视图，无法做这种查询。",
    "err_erp.no_sql": "助手还没有为这个问题写出查询，请换个说法再试。",
    "err_erp.query_failed": "助手写的查询没有通过检查或执行失败，请换个说法再试。",
    "err_erp.unknown_filter": "{form}没有这些筛选条件：{filters}。",
    "err_erp.bad_filter": "筛选条件{filter}只能是一个文本、数字或日期。",
    "err_erp.filter_too_long": "筛选条件{filter}超过 {max} 个字符，请缩短后再试。",
    "err_erp.bad_arguments": "助手给这一步的参数有误，请换个说法再试。",
    "err_erp.problem.ambiguous_field": "{label}对应多个字段，请写出完整的字段名",
    "err_erp.problem.invalid": "{label}的值不符合要求",
    proposal: "写入提案", proposalOp: "{form} · {op}", field: "字段", before: "修改前", after: "修改后",
    confirm: "确认", reject: "取消", expires: "提案有效期 {time}", autoExec: "确认后自动执行",
    change_add: "新增", change_update: "修改", change_delete: "删除", op_create: "新建", op_update: "修改",
    op_delete: "删除", op_examine: "审核", op_generate: "生成",
    opProcessing: "处理中", opPending: "待处理", opDone: "已完成", opFailed: "失败", opCancelled: "已取消", opExpired: "已过期", opAwaiting: "等待审批", opRejected: "审批未通过", waitingFor: "等待：{who}", myApprovals: "待我审批", requestedBy: "{who} 提交", approvalWhy: "需要审批：{why}", approvalRules: "审批规则：{rules}", approvalLink: "链接", approvalLinkTitle: "此审批的地址（可转给其他审批人）；申请人的会话只有申请人能打开", approvalNotListed: "链接里的审批不在待我审批中：已处理、已撤回，或不由您审批。", listPrice: "标价", tainted: "⚠ 非您输入，{from}", ackTainted: "我已核对标 ⚠ 的值（复制自读到的文本，不是您输入的）", editOp: "修改", editValues: "修改提案的值", saveEdit: "保存修改", cancelEdit: "放弃修改", opEdited: "已按您的修改更新", editLinesKept: "其余 {n} 行不变，按提议保留", opEditedBy: "{who} 修改了提案：请核对后再确认", approvalEdited: "已修改“{what}”，退回 {who} 核对后重新确认", problem_min_plain: "低于允许的最小值", problem_max_plain: "超过允许的最大值", problem_type: "值的格式不对", approveOp: "批准", rejectOp: "驳回", rejectWhy: "驳回原因（申请人可见）",
    goErp: "去ERP操作", view: "查看", retry: "重试", billNo: "单号 {no}",
    workflow: "可复用工作流", workflowLoad: "载入中…", workflowParams: "参数", workflowSteps: "步骤",
    replay: "按新参数重新运行", replaying: "运行中…", replayDone: "运行完成：{status}", step: "步骤",
    openReport: "打开报告", reportBlocked: "浏览器拦截了新窗口：", reportFailed: "无法打开报告：{reason}",
    erpUnavailable: "ERP 暂时无法访问，正在自动重试；您的登录和会话都会保留。",
    loginErpUnavailable: "ERP 暂时无法访问，请稍后再登录。",
    requestFailed: "请求失败：{reason}", networkRetry: "连接中断，正在重连…",
    signedInAs: "{name}", lang: "English", langName: "中文",
    menu: "会话列表", toolInterrupted: "未完成",
    pill_op_pending: "待ERP处理", pill_op_processing: "写入处理中", pill_op_failed: "写入失败",
    pill_op_awaiting_approval: "等待审批", write_awaiting_approval: "等待审批",
    withdraw: "撤回申请", withdrawConfirm: "撤回这个审批申请？撤回后这次写入不会执行，会话也会停止；要再写入需要重新提议。",
    withdrawn: "已撤回审批申请。",
    write_draft: "等待确认", write_processing: "处理中", write_pending: "待ERP处理", write_failed: "写入失败",
    retryFailed: "重试未成功：{reason}",
    opAskAgain: "这个提案不能再执行了（记录已变更或提案已过期）：请重新发送您的请求，生成新的提案。",
    tool: "工具", state: "状态", workflowId: "工作流 ID：{id}", noParams: "没有可调整的参数",
    unsetParams: "未设置的参数（{n}）", paramUnset: "未设置", listHint: "多个值用逗号分隔",
    param_keywords: "关键词", param_business_line: "业务线", param_channel: "渠道", param_customer_tier: "客户等级",
    param_start_time: "开始时间", param_end_time: "结束时间", param_top_n: "关键词数量", param_split_by: "拆分维度",
    param_title: "标题", param_days: "天数", param_label: "标签", param_seconds: "秒数", param_question: "问题",
    param_text: "文本", param_request: "请求",
  },
  en: {
    skipToInput: "Skip to the message box", conversations: "Conversations", newChat: "New chat",
    searchLabel: "Search conversations by title", searchPlaceholder: "Search titles", recent: "Recent",
    archivedList: "Archived", showArchived: "Archived", loadMore: "Load more", logout: "Log out", stop: "Stop",
    relogin: "Log in again", messages: "Messages", emptyTitle: "How can I help?",
    emptyHint: "Ask a question to start a conversation.",
    emptyHint_erp: "Ask to start a conversation, e.g. “新建一张报价单给<customer>” (a new quotation) or “<customer>的应收账款有多少超期了？” (overdue receivables).",
    inputLabel: "Message", inputPlaceholder: "Message — Enter sends, Shift+Enter breaks the line", send: "Send",
    loginTitle: "Log in to tether", loginMethod: "Login method", loginPassword: "Username and password", loginPassword_erp: "ERP account", loginToken: "Dev token",
    username: "Username", password: "Password", token: "Token", login: "Log in",
    loginFailed: "Login failed: {reason}", loginWrongToken: "Unknown or expired token",
    loginNoErp: "This server has no ERP login", loginMissing: "Enter a username and a password",
    loginMissingToken: "Enter a token",
    sessionExpired: "Your login expired. Log in again; this conversation stays open.",
    loginLapsed: "Your login expired: log in again, then try once more.",
    loginExpiredEvent: "The business system's login expired. Log in again, then send your request again.",
    resend: "Send the last message again", rename: "Rename", archive: "Archive", renameLabel: "New title",
    renameOf: "Rename “{title}”", archiveOf: "Archive “{title}”", unarchiveOf: "Unarchive “{title}”", save: "Save", cancel: "Cancel",
    noConversations: "No conversations yet", noMatches: "No matching conversations",
    notSupported: "The server does not support this yet ({status})",
    you: "You", assistant: "Assistant", copy: "Copy", copied: "Copied", copyFailed: "Copy failed",
    tools: "Tool calls ({n})", thought: "Thinking", toolRequested: "requested", toolRunning: "running", toolDone: "succeeded",
    toolFailed: "failed", toolWaiting: "waiting for callback", toolCancelled: "cancelled", arguments: "Arguments",
    result: "Result", error: "Error", duration: "{ms} ms", skills: "Skills: {names}",
    status_RUNNING: "Running", status_SUCCEEDED: "Done", status_FAILED: "Failed", status_CANCELLED: "Stopped",
    status_WAITING_ASYNC_CALLBACK: "Waiting for a job", status_WAITING_USER_INPUT: "Waiting for your answer",
    status_WAITING_CONFIRMATION: "Waiting for confirmation",
    stopped: "This answer was stopped.", failed: "This turn failed: {reason}", thinking: "Thinking…",
    answering: "Answering", answerDone: "Answer complete",
    outcome_no_rows: "No records", outcome_not_granted: "Not granted", outcome_not_understood: "Not understood",
    notFound: "This conversation was not found (it may belong to someone else).",
    question: "Your answer is needed", freeText: "Or type another answer", submit: "Submit",
    answered: "Answered: {answer}", form: "Please fill in the form", required: "required", addLine: "Add line",
    removeLine: "Remove this line", lines: "Lines", lineNo: "Line", formSubmitted: "Form submitted",
    formProblems: "{n} field(s) need a change", yes: "Yes", no: "No", choose: "Choose…", refSearch: "Type a name or code to search",
    refNone: "No matching record you can see", refPrice: "price {price}", refChosen: "Chosen: {label}",
    refUnavailable: "Search is unavailable now; type a code or name, it is checked on submit.",
    problem_required: "Required", problem_max_length: "Too long", problem_option: "Not one of the options",
    problem_date: "Use a date YYYY-MM-DD", problem_read_only: "Read-only", problem_unknown: "Not a field of this form",
    problem_type_integer: "Enter a whole number", problem_type_number: "Enter a number",
    problem_min: "Must be at least {min}", problem_positive: "Must be greater than 0", problem_max: "Must be below {max}",
    problem_max_lines: "At most {n} lines", problem_min_lines: "Add at least {n} line(s)",
    problem_ref: "Nothing you can see matches this",
    problem_ambiguous: "Matches several records: choose one or enter its code",
    "err_tool.unknown": "The assistant asked for a step that does not exist; try rephrasing.",
    "err_tool.not_allowed": "That step is not available for this request; try rephrasing.",
    "err_tool.not_authorised": "You may not do this step (missing: {grants}).",
    "err_tool.bad_arguments": "The assistant sent this step malformed arguments; try again.",
    "err_tool.invalid_arguments": "The assistant sent this step arguments it does not accept; try rephrasing.",
    "err_tool.budget": "Your budget of {limit} tool calls per minute is spent; try again in {seconds} s.",
    "err_tool.timeout": "This step did not finish within {seconds} s; try again later.",
    "err_tool.unavailable": "{system} cannot be reached right now; try again in {seconds} s.",
    "err_tool.failed": "This step failed; try rephrasing or try again later.",
    "err_ask_user.empty": "The assistant meant to ask you something but the question was empty; say again what you need.",
    "err_skill.unknown": "There is no skill named {skill}; try rephrasing.",
    "err_job.failed": "The background job did not finish ({reason}); try again later.",
    "err_turn.timeout": "The turn took longer than its {seconds} s limit and was stopped; try again or ask a smaller question.",
    "err_turn.max_rounds": "The assistant did not reach an answer within {rounds} rounds and was stopped; try rephrasing.",
    "err_turn.max_tool_calls": "The assistant used its {calls} tool calls for this turn without finishing and was stopped; try a smaller question.",
    "err_model.failed": "The model service failed; try again later.",
    "err_limit.daily_tokens": "Your daily budget of {limit} model tokens is spent; it resets at {resetAt}.",
    "err_limit.daily_model_calls": "Your daily budget of {limit} model calls is spent; it resets at {resetAt}.",
    "err_limit.login_user": "Too many failed logins for this username: it is locked out; try again at {resetAt}.",
    "err_limit.login_address": "Too many failed logins from your address: it is locked out; try again at {resetAt}.",
    "err_limit.login_busy_user": "Too many login attempts at once for this username; try again in {seconds} s.",
    "err_limit.login_busy_address": "Too many login attempts at once from your address; try again in {seconds} s.",
    "err_erp.unreachable": "The ERP cannot be reached right now; try again in {seconds} s.",
    "err_erp.login_expired": "Your ERP login has expired; log in again.",
    "err_erp.no_access": "There is no form {form}, or you may not use it.",
    "err_erp.no_bill": "There is no {form} {bill_no} that you can see. Check the number.",
    "err_erp.read_only": "{form} is read-only: it cannot be written here.", "err_erp.no_examine": "{form} has no examine step.",
    "err_erp.no_change": "{record} already has these values.",
    "err_erp.not_found": "{label}: nothing you can see matches “{value}”.",
    "err_erp.invalid_values": "The values do not fit {form}: {problems}.",
    "err_erp.problem.required": "{label} is required",
    "err_erp.problem.type": "{label} has a value of the wrong kind",
    "err_erp.problem.option": "{label} is not one of its options",
    "err_erp.problem.read_only": "{label} is read-only (the ERP sets it)",
    "err_erp.problem.unknown": "{label} is not a field of this form",
    "err_erp.problem.max_length": "{label} is too long",
    "err_erp.problem.date": "{label} must be a date YYYY-MM-DD",
    "err_erp.problem.min": "{label} is below its minimum",
    "err_erp.problem.max": "{label} is above its maximum",
    "err_erp.problem.max_lines": "{label} has too many lines",
    "err_erp.login_missing": "This needs an ERP login; log in with your ERP account and try again.",
    "err_erp.refused": "The ERP refused the request ({status}): {reason}.",
    "err_erp.no_record": "There is no {form} {record} that you can see. Check the number.",
    "err_erp.bad_record_id": "“{value}” is not a bill number or record id (letters, digits, - _ . : only; at most 64).",
    "err_erp.needs_record": "Say which record to {op} (its bill number or id).",
    "err_erp.needs_source": "Say which bill to generate from (its bill number).",
    "err_erp.needs_session": "A write can only be proposed in a conversation, where you confirm it.",
    "err_erp.no_line": "{record} has no line {lines}.",
    "err_erp.bad_op": "“{op}” is not an operation here: create, update, delete, examine or generate.",
    "err_erp.cannot_edit": "This ERP connection cannot edit a proposal; cancel it and propose again.",
    "err_erp.nothing_to_edit": "A {op} has no values to edit.",
    "err_erp.ambiguous_ref": "A reference matches several records; name it by its code.",
    "err_erp.choose_one": "Choose one of the candidates.",
    "err_erp.no_views": "None of your forms has a query view, so this query cannot be run for you.",
    "err_erp.no_sql": "The assistant has no query for this question yet; try rephrasing.",
    "err_erp.query_failed": "The assistant's query was refused or failed; try rephrasing.",
    "err_erp.unknown_filter": "{form} has no filter {filters}.",
    "err_erp.bad_filter": "The filter {filter} must be a single text, number or date.",
    "err_erp.filter_too_long": "The filter {filter} is longer than {max} characters; shorten it.",
    "err_erp.bad_arguments": "The assistant gave this step arguments it cannot use; try rephrasing.",
    "err_erp.problem.ambiguous_field": "{label} names several fields; use the full field name",
    "err_erp.problem.invalid": "{label} has a value the form does not accept",
    proposal: "Write proposal", proposalOp: "{form} · {op}", field: "Field", before: "Before", after: "After",
    confirm: "Confirm", reject: "Cancel", expires: "Proposal expires {time}", autoExec: "Runs on confirmation",
    change_add: "add", change_update: "update", change_delete: "delete", op_create: "create", op_update: "update",
    op_delete: "delete", op_examine: "examine", op_generate: "generate",
    opProcessing: "Processing", opPending: "Pending", opDone: "Done", opFailed: "Failed", opCancelled: "Cancelled", opExpired: "Expired", opAwaiting: "Awaiting approval", opRejected: "Rejected", waitingFor: "waiting for: {who}", myApprovals: "Awaiting my approval", requestedBy: "by {who}", approvalWhy: "Needs approval: {why}", approvalRules: "Approval rules: {rules}", approvalLink: "Link", approvalLinkTitle: "This approval's address (to pass on to another approver); only the requester may open their conversation", approvalNotListed: "The approval in the link is not awaiting your approval: decided, withdrawn, or not yours to decide.", listPrice: "list price", tainted: "⚠ not typed by you, {from}", ackTainted: "I checked the values marked ⚠ (copied from text that was read, not typed by you)", editOp: "Edit", editValues: "Edit the proposed values", saveEdit: "Save changes", cancelEdit: "Discard changes", opEdited: "Updated with your changes", editLinesKept: "Other lines ({n}) stay as proposed", opEditedBy: "Edited by {who}: check the values, then confirm", approvalEdited: "Edited “{what}” and sent it back to {who} to check and confirm again", problem_min_plain: "Below the allowed minimum", problem_max_plain: "Above the allowed maximum", problem_type: "Wrong kind of value", approveOp: "Approve", rejectOp: "Reject", rejectWhy: "Why (shown to the requester)",
    goErp: "Open in the ERP", view: "View", retry: "Retry", billNo: "Bill {no}",
    workflow: "Reusable workflow", workflowLoad: "Loading…", workflowParams: "Parameters", workflowSteps: "Steps",
    replay: "Run again with these parameters", replaying: "Running…", replayDone: "Finished: {status}",
    step: "Step", openReport: "Open report", reportBlocked: "The browser blocked the new window: ",
    reportFailed: "Could not open the report: {reason}", requestFailed: "Request failed: {reason}",
    erpUnavailable: "The ERP cannot be reached right now; retrying. Your login and conversations are kept.",
    loginErpUnavailable: "The ERP cannot be reached right now; try logging in again shortly.",
    networkRetry: "Connection lost, reconnecting…", signedInAs: "{name}", lang: "中文", langName: "English",
    menu: "Conversations", toolInterrupted: "interrupted",
    pill_op_pending: "Waiting in the ERP", pill_op_processing: "Writing", pill_op_failed: "Write failed",
    pill_op_awaiting_approval: "Awaiting approval", write_awaiting_approval: "Awaiting approval",
    withdraw: "Withdraw request",
    withdrawConfirm: "Withdraw this approval request? The write will not run and the conversation stops; propose it again to write it.",
    withdrawn: "The approval request was withdrawn.",
    write_draft: "To confirm", write_processing: "Processing", write_pending: "Waiting in the ERP",
    write_failed: "Write failed",
    retryFailed: "The retry failed: {reason}",
    opAskAgain: "This proposal cannot run any more (the record changed or it expired): send your request again for a new proposal.",
    tool: "Tool", state: "Status", workflowId: "Workflow id: {id}", noParams: "No parameters to change",
    unsetParams: "Unset parameters ({n})", paramUnset: "not set", listHint: "separate values with commas",
    param_keywords: "Keywords", param_business_line: "Business line", param_channel: "Channel",
    param_customer_tier: "Customer tier", param_start_time: "Start", param_end_time: "End", param_top_n: "Top keywords",
    param_split_by: "Split by", param_title: "Title", param_days: "Days", param_label: "Label", param_seconds: "Seconds",
    param_question: "Question", param_text: "Text", param_request: "Request",
  },
};

let current = localStorage.getItem("tether.lang") === "en" ? "en" : "zh";

export function lang() {
  return current;
}

export function setLang(value) {
  current = value === "en" ? "en" : "zh";
  localStorage.setItem("tether.lang", current);
  document.documentElement.lang = current === "en" ? "en" : "zh-CN";
}

export function t(key, vars = {}) {
  const text = STRINGS[current][key] ?? STRINGS.zh[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => (name in vars ? String(vars[name]) : `{${name}}`));
}

// A coded message in the page's language (err_<code>, filled from its params); a parameter may be a
// coded message itself or a list of them (a form's problems). null when the table lacks a code.
function say(code, params) {
  const key = `err_${code}`;
  if (!code || !(key in STRINGS[current]) || !params || typeof params !== "object") return null;
  const filled = {};
  for (const [name, value] of Object.entries(params)) {
    const items = Array.isArray(value) ? value : [value];
    if (items.length && items.every((v) => v && typeof v === "object" && "code" in v)) {
      const said = items.map((v) => say(v.code, v.params || {}));
      if (said.includes(null)) return null;
      filled[name] = said.join(current === "zh" ? "；" : "; ");
    } else filled[name] = value;
  }
  const text = t(key, filled);
  return /\{\w+\}/.test(text) ? null : text;
}

// A date and time (ISO 8601, or epoch seconds) as the person's local month, day and time.
export function formatTime(value) {
  const d = new Date(typeof value === "number" ? value * 1000 : value);
  if (Number.isNaN(d.getTime())) return String(value);
  return d.toLocaleString(current === "en" ? "en" : "zh-CN", { month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", hour12: false });
}

// A coded refusal of the server ({error, code, params}: the abuse limits' 429) in the page's
// language, its resetAt as local time; null when the table lacks the code (the caller shows the
// server's own sentence).
export function refusalText(body) {
  if (!body || typeof body.code !== "string" || !body.params || typeof body.params !== "object") return null;
  const params = { ...body.params };
  if (typeof params.resetAt === "string") params.resetAt = formatTime(params.resetAt);
  return say(body.code, params);
}

// A coded message of the server (a turn's failure: turn.timeout, …) in the page's language, else
// its own words.
export function codedOr(data, words) {
  return (data && say(data.code, data.params || {})) ?? words;
}

// A tool's failure in the page's language: its code's text where the table has it; an uncoded
// failure is the core's tool.failed in Chinese (never an English sentence on a Chinese page) and
// the tool's own English explanation in English.
export function toolError(data) {
  const coded = say(data.code, data.params || {});
  if (coded !== null) return coded;
  // uncoded: the person's sentence first, the tool's own words after it (the row is a detail view)
  const said = current === "zh" && data.toolId ? say("tool.failed", { tool: data.toolId }) : null;
  return said !== null && data.error ? `${said}\n${data.error}` : (said ?? data.error);
}

// Static labels in the page: data-i18n (text), data-i18n-placeholder, data-i18n-aria (aria-label).
export function applyStatic(root = document) {
  for (const el of root.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const el of root.querySelectorAll("[data-i18n-placeholder]")) el.placeholder = t(el.dataset.i18nPlaceholder);
  for (const el of root.querySelectorAll("[data-i18n-aria]")) el.setAttribute("aria-label", t(el.dataset.i18nAria));
  document.documentElement.lang = current === "en" ? "en" : "zh-CN";
}
