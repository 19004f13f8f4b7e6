// tap.mjs - the checks the client scripts print: "ok - NAME" or "not ok - NAME (DETAIL)" lines, and their
// exit status (1 when any failed).
let failed = 0;

export const check = (name, cond, detail) => {
	console.log(`${cond ? "ok" : "not ok"} - ${name}${cond || detail === undefined ? "" : ` (${detail})`}`);
	if (!cond) failed++;
};

// fn's value, or undefined and a failed check named name with the error's message.
export const attempt = async (name, fn) => {
	try {
		return await fn();
	} catch (e) {
		check(name, false, e.message);
		return undefined;
	}
};

export const finish = () => process.exit(failed ? 1 : 0);
